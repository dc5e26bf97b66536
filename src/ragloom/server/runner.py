"""Run the sidecar under uvicorn (what `ragloom serve` calls)."""

from __future__ import annotations

import logging

import uvicorn

from ragloom.server.app import create_app
from ragloom.server.settings import ServerSettings

log = logging.getLogger("ragloom.server")
SHUTDOWN_GRACE = 3  # seconds open requests get after SIGTERM


def serve(
    settings: ServerSettings,
    host: str | None = None,
    port: int = 8181,
    access_log: bool = False,
    log_level: str = "info",
) -> None:
    """Serve until interrupted: Ctrl-C / SIGTERM stop within a few seconds (requests still
    running after `SHUTDOWN_GRACE` are cancelled; indexing jobs stop at their next file)."""
    host = host or settings.host
    if host not in ("127.0.0.1", "localhost", "::1") and not settings.token:
        logging.basicConfig()
        log.warning("listening on %s without a token: anyone who can reach it can use it", host)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        access_log=access_log,
        log_level=log_level,
        server_header=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
