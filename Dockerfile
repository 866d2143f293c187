# One image for every XCE service: the package with its console scripts
# (xce-core-service, xce-bridge, xce-recorder, xce-admin, xceadmin, xce-sched).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md setup.py ./
COPY build_support ./build_support
COPY schemas ./schemas
COPY services ./services
RUN pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 xce \
    && mkdir -p /recordings && chown xce /recordings
USER xce
