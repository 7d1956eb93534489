"""``dbxdec backfills`` and ``status``: what was launched, and the partition health grid."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ..atomic import write_atomically
from ..bundle.project import find_root
from ..launch.ledger import list_ledgers
from ..launch.status import job_history, partition_grid
from ..launch.status_grid import grid_html, grid_table
from .backfill_commands import connection_from, connection_options
from .options import load_project, pipelines_option


@click.command("backfills")
@click.option("--job", metavar="JOB", help="Only backfills of JOB.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None)
def backfills_command(job: str | None, as_json: bool, project: Path | None) -> None:
    """List the backfills recorded under .dbxdec/backfills/, newest first."""
    ledgers = list_ledgers(find_root(project), job)
    rows = []
    for ledger in ledgers:
        counts = ledger.counts()
        rows.append(
            {
                "id": ledger.id,
                "job": ledger.job,
                "backend": ledger.backend.kind,
                "state": ledger.state,
                "runs": len(ledger.slices),
                "succeeded": counts["succeeded"],
                "failed": counts["failed"],
                "created_at": ledger.created_at,
            }
        )
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo("No backfills yet.")
        return
    table = Table()
    # the id is what --resume takes: never cut or wrapped
    table.add_column("id", no_wrap=True, min_width=max(len(ledger.id) for ledger in ledgers))
    for column in ("job", "backend", "state", "succeeded", "failed", "runs"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            *(str(row[c]) for c in ("id", "job", "backend", "state")),
            str(row["succeeded"]),
            str(row["failed"]),
            str(row["runs"]),
        )
    Console(width=200 if not sys.stdout.isatty() else None).print(table)


@click.command("status")
@click.argument("job")
@click.option("--start", metavar="KEY", help="First key (inclusive).")
@click.option("--end", metavar="KEY", help="Last key (inclusive).")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the grid as a standalone HTML page.",
)
@click.option("--json", "as_json", is_flag=True, help="Key states as JSON.")
@connection_options
@pipelines_option
def status_command(
    job: str, start: str | None, end: str | None, html_file: Path | None, as_json: bool, **kw: Any
) -> None:
    """Partition health of JOB: one cell per key (succeeded, failed, running, missing).

    From the workspace's run history (job_parameters on runs), or with --local from
    the local backfill ledgers. Daily keys are drawn as a calendar.
    """
    config, registry = load_project(kw["project"], kw["pipelines"])
    definition = registry.get(job)
    history = job_history(definition, connection_from(kw), root=config.root)
    grid = partition_grid(definition, history, start=start, end=end)
    if html_file is not None:
        write_atomically(html_file, grid_html(grid))
    if as_json:
        click.echo(json.dumps({"job": job, "states": dict(grid.states)}))
        return
    Console().print(grid_table(grid))
    if html_file is not None:
        click.echo(f"Wrote {html_file}")


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (backfills_command, status_command):
        group.add_command(command)
