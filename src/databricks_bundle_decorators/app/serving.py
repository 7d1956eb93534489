"""Serving the app with uvicorn: on loopback for ``dbxdec app``, on ``0.0.0.0`` and
``DATABRICKS_APP_PORT`` as a Databricks App.

Databricks Apps' rules kept here (https://docs.databricks.com/aws/dev-tools/databricks-apps/best-practices):
listen on ``0.0.0.0`` and the port in ``DATABRICKS_APP_PORT``; shut down within 15 seconds
of SIGTERM, or the app is killed (uvicorn stops on SIGTERM; open connections, a live page's
polling included, get :data:`GRACEFUL_SECONDS` to finish); log to stdout/stderr.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType

from .settings import AppSettings

GRACEFUL_SECONDS = 5
"""Seconds open requests get after SIGTERM (Databricks Apps allows 15 in all)."""
LOOPBACK = "127.0.0.1"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port).

    Raises:
        OSError: the port is taken or the address is not this machine's.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    settings: AppSettings,
    sock: socket.socket,
    *,
    on_ready: Callable[[str], None] | None = None,
    access_log: bool = True,
) -> None:
    """Serve the app on ``sock`` until SIGINT or SIGTERM (then within
    :data:`GRACEFUL_SECONDS`)."""
    import uvicorn

    from .server import build_app

    host, port = sock.getsockname()[:2]
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    config = uvicorn.Config(
        build_app(settings),
        log_level="info" if access_log else "warning",
        access_log=access_log,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        server_header=False,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(f"http://{host}:{port}/")
    # uvicorn shuts down on SIGTERM and then raises the signal again under the handler it
    # found: this one makes that a normal exit (0) instead of death by signal
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)
