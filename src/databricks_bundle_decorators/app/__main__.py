"""``python -m databricks_bundle_decorators.app``: the app as Databricks Apps runs it,
from the ``command`` of the ``app.yaml`` that ``dbxdec generate`` writes.

It listens on ``0.0.0.0`` and the port Databricks Apps gives in ``DATABRICKS_APP_PORT``
(https://docs.databricks.com/aws/dev-tools/databricks-apps/app-runtime), with user
authorization on; ``--project`` names the folder holding the project's ``pyproject.toml``
(default: the current one). Exit codes: 2 no ``DATABRICKS_APP_PORT``
or a bad one, 3 the app's packages are missing; on SIGTERM it shuts down, then
uvicorn re-raises that signal, which ends the process.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .settings import APP_PORT, databricks_app_settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m databricks_bundle_decorators.app",
        description="Serve the dbxdec backfill app as a Databricks App.",
    )
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="Project folder.")
    args = parser.parse_args(argv)
    port = os.environ.get(APP_PORT, "")
    if not port.isdigit() or not 0 < int(port) < 65536:
        print(
            f"Error: {APP_PORT} is {port or 'unset'!r}: Databricks Apps sets it to the port the "
            "app must listen on; to run the app on this machine use: dbxdec app",
            file=sys.stderr,
        )
        return 2
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        print(
            f"Error: {exc.name} is missing: list dbxdec's wheel with its app extra in the "
            "app's requirements.txt ('<wheel>[app]')",
            file=sys.stderr,
        )
        return 3
    from .serving import bind, serve

    settings = databricks_app_settings(args.project.resolve())
    serve(settings, bind("0.0.0.0", int(port)), on_ready=_announce)
    return 0


def _announce(url: str) -> None:
    # Flushed: Databricks Apps keep what the app writes to stdout as its log
    # (https://docs.databricks.com/aws/dev-tools/databricks-apps/best-practices), and a
    # pipe would hold the line back until exit.
    print(f"Serving on {url}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
