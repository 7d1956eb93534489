"""``dbxdec app``: the backfill app on this machine (loopback only)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ...bundle.project import project_root
from ...errors import EnvironmentProblem, UsageError
from ...launch.plan.request import Connection
from ..inputs.options import connection_record, pipelines_option


@click.command("app")
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 to listen on (0: a free one, printed).",
)
@click.option(
    "--live-seconds",
    type=click.FloatRange(min=0.2),
    default=2.0,
    show_default=True,
    help="How often a running backfill's page asks for news.",
)
@connection_record(
    "Show the local ledgers only (.dbxdec/backfills/); reach no workspace.",
    "Bundle target (databricks.yml) whose workspace and deployed jobs the app reads "
    "(detached backfills, runs) and launches on.",
)
@pipelines_option
def app_command(
    port: int,
    live_seconds: float,
    connection: Connection,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Serve the backfill app on 127.0.0.1: every backfill (local ledgers and, with a
    workspace, the detached ones), one backfill's grid, timeline, failures and checks
    updating live, a job's partition health, and launching, pausing, unpausing,
    cancelling, resuming and undoing detached backfills.

    \b
    Examples:
      dbxdec app                  local ledgers (and DATABRICKS_HOST's workspace if set)
      dbxdec app -t dev           the dev target's workspace too
      dbxdec app --port 8050

    The workspace is reached with your own credentials, as dbxdec backfill reaches it;
    what you may do is what your job permissions allow. The server binds to 127.0.0.1
    only: it is reachable from this machine alone. Ctrl-C stops it. The same app deploys
    as a Databricks App: see [tool.dbxdec.app] in docs/guides/app.md.

    Exit codes: 0 stopped (SIGTERM), 2 the port is taken or a bad option, 3 the app's
    packages (dbxdec's app extra) are not installed, 130 stopped with Ctrl-C.
    """
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise EnvironmentProblem(
            f"the app needs {exc.name}: install dbxdec's wheel with its app extra "
            "(pip install 'dist/dbxdec-<version>-py3-none-any.whl[app]', from make wheel), or "
            'pip install "starlette>=0.40" "uvicorn>=0.30" "jinja2>=3.1"'
        ) from None
    from ...app.serving import LOOPBACK, bind, serve
    from ...app.settings import AppSettings

    root = project_root(project)
    wants_workspace = bool(
        connection.target
        or connection.host
        or connection.profile
        or os.environ.get("DATABRICKS_HOST")
    )
    settings = AppSettings(
        root=root,
        pipelines=pipelines,
        connection=None if connection.local or not wants_workspace else connection,
        live_seconds=live_seconds,
    )
    try:
        sock = bind(LOOPBACK, port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {LOOPBACK}:{port} ({exc.strerror}): choose another --port, or "
            "--port 0 for a free one"
        ) from None

    def ready(url: str) -> None:
        where = (
            "local ledgers only"
            if settings.connection is None
            else "local ledgers and the workspace"
        )
        click.echo(f"Serving the backfill app on {url} ({where}); Ctrl-C stops it.")

    serve(settings, sock, on_ready=ready, access_log=False)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(app_command)
