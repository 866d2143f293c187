import warnings

# Starlette notes at import that its TestClient prefers another httpx package; the
# tests use the one installed.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
