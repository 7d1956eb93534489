"""``dbxdec backfill pause|unpause|cancel|watch ID``: steer and follow a detached backfill
(``dbxdec backfill ... --detach``) from any machine, through its journal in the workspace."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...bundle.project import project_root
from ...errors import DbxdecError
from ...launch.plan.request import Connection
from ...launch.status.journal_status import (
    JournalView,
    locate_journal,
    read_view,
    summary_line,
    watch,
)
from ...launch.steer.steering import SteerAction, steer
from ..inputs.options import option_record
from .undo_commands import ReservedCommand

F = TypeVar("F", bound=Callable[..., Any])

workspace_options = option_record(
    "connection",
    Connection,
    click.option(
        "-t",
        "--target",
        metavar="TARGET",
        help="Bundle target (databricks.yml) the job was deployed to.",
    ),
    click.option(
        "--job-id", type=click.IntRange(min=1), help="Deployed job id (skips the lookup)."
    ),
    click.option("--profile", help="~/.databrickscfg profile (default: environment)."),
    click.option("--host", help="Workspace URL (default: DATABRICKS_HOST or profile)."),
)
"""Where the backfill's job is deployed: the workspace and how to find the job."""

_project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project folder (default: the one holding the current directory).",
)

_STEER_EXITS = (
    "Exit codes: 0 recorded, 2 unknown ID or the backfill has ended, 4 credentials refused "
    "or no CAN_MANAGE_RUN on the job, 5 workspace unreachable."
)


def _steer_command(action: SteerAction, summary: str, detail: str) -> click.Command:
    @click.command(action, cls=ReservedCommand, help=f"{summary}\n\n{detail}\n\n{_STEER_EXITS}")
    @click.argument("backfill_id", metavar="ID")
    @workspace_options
    @_project_option
    def command(backfill_id: str, connection: Connection, project: Path | None) -> None:
        place = locate_journal(backfill_id, connection, project_root(project))
        for line in steer(place, action).lines:
            click.echo(line)

    return command


pause_command = _steer_command(
    "pause",
    "Pause detached backfill ID: launch no new runs; the runs in flight finish.",
    "Needs CAN_MANAGE_RUN (or IS_OWNER, CAN_MANAGE) on the backfilled job, directly or "
    "through a group. The request is recorded in the backfill's journal; its controller "
    "reads it at its next tick. Undo with: dbxdec backfill unpause ID.",
)
unpause_command = _steer_command(
    "unpause",
    "Unpause detached backfill ID: its controller launches again.",
    "Needs CAN_MANAGE_RUN on the backfilled job. If no controller run of the backfill is "
    "active (its run was cancelled, or it stopped), one is started (a run-now of the "
    "dbxdec_controller job). Also resumes a cancelled detached backfill.",
)
cancel_command = _steer_command(
    "cancel",
    "Cancel detached backfill ID: cancel its runs in flight and launch nothing more.",
    "Needs CAN_MANAGE_RUN on the backfilled job. With a controller running, the "
    "controller cancels the runs; with none, this command does (a run whose run-now "
    "reply was lost is found by its idempotency token first). Nothing is lost: "
    "dbxdec backfill unpause ID (a controller run) or dbxdec backfill --resume ID (this "
    "machine) goes on later.",
)


@click.command("watch", cls=ReservedCommand)
@click.argument("backfill_id", metavar="ID")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.0),
    default=10.0,
    show_default=True,
    help="Seconds between two readings of the journal.",
)
@click.option("--refreshes", type=click.IntRange(min=1), hidden=True, help="Stop after N readings.")
@workspace_options
@_project_option
def watch_command(
    backfill_id: str,
    interval: float,
    refreshes: int | None,
    connection: Connection,
    project: Path | None,
) -> None:
    """Follow detached backfill ID until it ends: a line each time it moves.

    \b
    Example:
      dbxdec backfill watch sales-20240601T020000-1a2b

    Reads the backfill's journal in the workspace every --interval seconds (from any
    machine; no local ledger needed) and prints how many runs succeeded, are running,
    failed, were cancelled and are pending, and whether it is paused or cancelled.
    Ctrl-C stops watching; the backfill goes on in the workspace.

    Exit codes: 0 the backfill succeeded, 1 it ended with failed runs or was cancelled,
    2 unknown ID, 4 credentials refused, 5 workspace unreachable, 130 Ctrl-C (the
    backfill goes on).
    """
    place = locate_journal(backfill_id, connection, project_root(project))
    last: list[str] = []

    def show(view: JournalView) -> None:
        line = summary_line(view)
        if line not in last[-1:]:
            click.echo(line)
            last.append(line)

    try:
        view = watch(
            lambda: read_view(place), show, lambda: time.sleep(interval), refreshes=refreshes
        )
    except KeyboardInterrupt:  # main() says "Interrupted." and exits 130
        click.echo(f"Stopped watching; backfill {backfill_id} goes on in the workspace.", err=True)
        raise
    if view.ended and view.ledger.state != "succeeded":
        raise BackfillEnded(
            f"backfill {backfill_id} ended {view.ledger.state}: see dbxdec status "
            f"{place.job} --backfill {backfill_id}; go on with dbxdec backfill --resume "
            f"{backfill_id}"
        )


class BackfillEnded(DbxdecError):
    """A watched backfill ended without succeeding (exit 1)."""

    exit_code = 1


STEER_COMMANDS = (pause_command, unpause_command, cancel_command, watch_command)


def register(group: click.Group) -> None:
    """Add pause, unpause, cancel and watch to ``group``'s ``backfill`` group (made by
    ``undo_commands.register``)."""
    backfill = group.commands["backfill"]
    assert isinstance(backfill, click.Group), "register undo_commands first"
    for command in STEER_COMMANDS:
        backfill.add_command(command)
