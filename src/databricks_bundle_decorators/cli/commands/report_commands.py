"""``dbxdec backfills`` and ``status``: what was launched, and the partition health grid."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from ...atomic import umask_mode, write_atomically
from ...bundle.project import project_root
from ...bundle.table_graph import build_table_graph, render_text
from ...bundle.workflows import open_project
from ...errors import UsageError
from ...launch.ledger.ledger import list_ledgers
from ...launch.plan.request import Connection
from ...launch.plan.states import KeyState
from ...launch.status.journal_status import workspace_journals
from ...launch.status.overdue import failed_checks, overdue_keys, require_deadlines
from ...launch.status.status import job_status, partition_grid
from ...launch.status.status_grid import unchecked_keys
from ...launch.status.status_view import status_page, terminal_table
from ...launch.status.timeline import build_timeline, timeline_html
from ..inputs.options import (
    connection_record,
    load_for_job,
    load_project,
    pipelines_option,
    project_option,
)
from ..output.journal_output import (
    backfill_ledger,
    backfill_row,
    echo_backfill_status,
    echo_overdue,
)
from .steer_commands import workspace_options

_STALE_LINES = 10
"""The most stale keys ``dbxdec status`` lists with their reasons under the grid."""
_COUNTS = ("succeeded", "failed", "runs")
_FULL = ("started", "job", "backend", "state", "succeeded", "failed", "runs")
_NARROW = ("started", "state (runs ok)")  # the id holds the job's name


def _backfills_table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> Table:
    table = Table()
    # the id is what --resume takes: never cut, never wrapped
    table.add_column("id", no_wrap=True, width=max(len(row["id"]) for row in rows))
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in _COUNTS else "left",
            no_wrap=column == "started",  # one piece: "2024-06-01 02:00"
        )
    for row in rows:
        outcome = f"{row['state']} ({row['succeeded']}/{row['runs']})"
        cells = {**row, "state (runs ok)": outcome}
        table.add_row(row["id"], *(str(cells[c]) for c in columns))
    return table


def _print_backfills(rows: list[dict[str, Any]], where: bool = False) -> None:
    """The table at the terminal's width (fewer columns if narrow), never with a cut id."""
    console = Console()  # the terminal's width; piped, $COLUMNS or 80
    unbounded = console.options.update_width(sys.maxsize)
    for columns in ((*_FULL, "where"), (*_NARROW, "where")) if where else (_FULL, _NARROW):
        table = _backfills_table(rows, columns)
        needed = Measurement.get(console, unbounded, table).minimum
        if needed <= console.width:
            console.print(table)
            return
    Console(width=needed).print(table)


@click.command("backfills")
@click.option("--job", metavar="JOB", help="Only backfills of JOB.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.option(
    "--workspace",
    is_flag=True,
    help="Also list the detached backfills (--detach) of the project's jobs: their "
    "journals in the workspace, from any machine (a column says where each is).",
)
@workspace_options
@project_option
def backfills_command(
    job: str | None, as_json: bool, workspace: bool, connection: Connection, project: Path | None
) -> None:
    """List the backfills recorded under .dbxdec/backfills/, newest first; with
    --workspace also the detached ones, from their journals in the workspace.

    The id is what 'dbxdec backfill --resume ID' takes; it is printed whole.
    """
    rows = [backfill_row(ledger) for ledger in list_ledgers(project_root(project), job)]
    if workspace:  # the project's jobs, or JOB: their journals in the workspace
        config, registry = load_project(project, ())
        names = [job] if job else [d.name for d in registry if d.backfill is not None]
        rows += map(backfill_row, workspace_journals(names, connection, config.root))
        rows.sort(key=lambda row: float(row["created_at"]), reverse=True)
    for row in rows:
        started = datetime.fromtimestamp(float(row["created_at"])).astimezone()
        row["started"] = started.strftime("%Y-%m-%d %H:%M")  # local time
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo("No backfills yet.")
        return
    _print_backfills(rows, where=workspace)


@click.command("status")
@click.argument("job")
@click.option("--start", metavar="KEY", help="First key (inclusive).")
@click.option("--end", metavar="KEY", help="Last key (inclusive).")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the grid as a standalone HTML page (failed keys with their error "
    "and a link to their run).",
)
@click.option(
    "--backfill",
    "backfill_id",
    metavar="ID",
    help="Only backfill ID's keys, from its ledger, or from its journal in the workspace "
    "for a detached backfill (any checkout); with --html also its timeline (a bar per "
    "run attempt, stragglers, runs in flight against max_concurrent).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Key states as JSON; with --local also the stale keys, each with its reasons "
    "and provenance.",
)
@click.option(
    "--overdue",
    is_flag=True,
    help="List the keys past their deadline (@job(deadline=...)) that have not succeeded, "
    "each with its reason: no run, run failed, checks failed, still running (or unknown).",
)
@connection_record(
    "Read the local backfill ledgers (.dbxdec/backfills/) instead of the workspace's "
    "run history; nothing runs."
)
@pipelines_option
def status_command(
    job: str,
    start: str | None,
    end: str | None,
    html_file: Path | None,
    backfill_id: str | None,
    as_json: bool,
    overdue: bool,
    connection: Connection,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Partition health of JOB: one cell per key (succeeded, failed, running, missing,
    unknown, and with --local stale).

    From the workspace's run history (job_parameters on runs; the workspace keeps runs
    60 days) and then the local backfill ledgers, or with --local from the ledgers alone.
    A key with no record that ended more than 60 days ago is unknown, not missing.
    With --local, a succeeded key of the project's local tables that is stale (its task's
    code or the data it read changed since it was written, as `dbxdec stale` says) is
    stale, its reasons listed under the grid and, with --json, with its provenance.
    Daily keys are drawn as a calendar; each state has its own glyph, so the grid reads
    the same without colour.
    """
    config, registry = load_for_job(project, pipelines, job)
    definition = registry.get(job)
    now = datetime.now(timezone.utc)
    if backfill_id is not None and html_file is None and not overdue:
        echo_backfill_status(
            definition,
            backfill_id,
            connection,
            config.root,
            start=start,
            end=end,
            as_json=as_json,
            now=now,
        )
        return
    if overdue:
        if html_file is not None:
            raise UsageError("--overdue lists keys; it draws no page: leave out --html")
        require_deadlines(definition)  # before asking the workspace
    status = job_status(
        definition,
        connection,
        root=config.root,
        now=now,
        warehouse=config.warehouse,
        jobs=list(registry),
    )
    if overdue:
        late = overdue_keys(
            definition,
            status,
            now=now,
            start=start,
            end=end,
            checks=failed_checks(
                list_ledgers(config.root, job, backend="local" if connection.local else None)
            ),
        )
        echo_overdue(definition, late, now=now, as_json=as_json)
        return
    grid, origin = partition_grid(definition, status, start=start, end=end)
    if html_file is not None:
        extra = ""
        if backfill_id is not None:
            ledger = backfill_ledger(backfill_id, job, connection, config.root)[0]
            extra = timeline_html(build_timeline(ledger, now=now.timestamp()))
        page = status_page(grid, origin, extra_html=extra)
        write_atomically(html_file, page, mode=umask_mode())
    unchecked = unchecked_keys(grid.details, grid.states)
    stale = [key for key, state in grid.states.items() if state == KeyState.STALE]
    if as_json:
        document: dict[str, Any] = {"job": job, "states": dict(grid.states)}
        document["checks_off"] = unchecked
        if grid.provenance is not None:  # local tables: what wrote each stale key, and why
            document["stale"] = grid.provenance.stale_json(stale)
        click.echo(json.dumps(document))
        return
    console = Console()
    console.print(terminal_table(grid, console))
    for key in stale[:_STALE_LINES]:
        click.echo(f"Stale {key}: {'; '.join(grid.stale_reasons(key))}")
    if len(stale) > _STALE_LINES:
        click.echo(f"... and {len(stale) - _STALE_LINES} more stale keys: dbxdec stale {job}")
    if unchecked:
        shown = ", ".join(unchecked[:10]) + (
            f" and {len(unchecked) - 10} more" if len(unchecked) > 10 else ""
        )
        click.echo(f"Checks were off (dbxdec backfill --no-checks) in the latest run of: {shown}")
    if connection.local:  # keys a triggered or catching-up job left (max_keys)
        from ...runtime.triggers.local_trigger import pending_line

        line = pending_line(definition, config.warehouse)
        if line is not None:
            click.echo(line)
    if html_file is not None:
        click.echo(f"Wrote {html_file}")


@click.command("graph")
@pipelines_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the graph as JSON (schema: docs/guides/graph.md) instead of text.",
)
def graph_command(project: Path | None, pipelines: tuple[str, ...], as_json: bool) -> None:
    """Print the table graph: jobs, the tables they write (IoManagers) and read
    (sources), and an edge from each writer to each reader with its key mapping.

    \b
    Exit codes: 0 the graph printed; 1 a definition is wrong, or jobs read each
    other's tables in a cycle (the one line names the jobs and tables).
    """
    graph = build_table_graph(open_project(project, pipelines).jobs)
    if as_json:
        click.echo(json.dumps(graph.to_json(), indent=2))
        return
    for line in render_text(graph):
        click.echo(line)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (backfills_command, status_command, graph_command):
        group.add_command(command)
