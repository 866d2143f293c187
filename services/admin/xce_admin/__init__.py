"""Admin HTTP API (FastAPI) and the ``xceadmin`` command line."""
