"""The ``dbxdec backfill`` group and its subcommands ``undo``, ``cost``, ``pause``, ``unpause``,
``cancel`` and ``watch`` (these four steer a detached backfill through its workspace journal)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...bundle.project import project_root
from ...errors import DbxdecError
from ...launch.estimate.cost import backfill_cost
from ...launch.operations.undo import prepare_undo
from ...launch.plan.request import Connection
from ...launch.status.journal_status import (
    JournalView,
    locate_journal,
    read_view,
    summary_line,
    watch,
)
from ...launch.steer.steering import SteerAction, steer
from ..inputs.options import connection_record, load_project, pipelines_option

F = TypeVar("F", bound=Callable[..., Any])

_LAUNCHER_ARGS = "dbxdec.backfill.launcher_args"
_project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project folder (default: the one holding the current directory).",
)


class BackfillGroup(click.Group):
    """``backfill``: a subcommand when the first argument names one (``undo``), else the
    launcher command with every argument as given (a job named like a subcommand is
    reached with an option first: ``dbxdec backfill --start A --end B undo``).

    Example:
        >>> group = BackfillGroup(click.Command("backfill"), [click.Command("undo")])
        >>> sorted(group.commands)
        ['undo']
    """

    def __init__(self, default: click.Command, subcommands: list[click.Command]) -> None:
        super().__init__(
            default.name,
            commands=subcommands,
            help=default.help,
            short_help=default.short_help,
            no_args_is_help=False,
        )
        self.default = default

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own_help = len(args) == 1 and args[0] in ctx.help_option_names
        if own_help or (args and args[0] in self.commands):
            return super().parse_args(ctx, args)
        ctx.meta[_LAUNCHER_ARGS] = list(args)  # the launcher parses them, in invoke
        return []

    def invoke(self, ctx: click.Context) -> object:
        args = ctx.meta.pop(_LAUNCHER_ARGS, None)
        if args is None:
            return super().invoke(ctx)
        # the launcher takes this group's place: its usage line is `dbxdec backfill ...`
        with self.default.make_context(ctx.info_name, args, parent=ctx.parent) as launcher:
            return self.default.invoke(launcher)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.default.format_help(ctx, formatter)
        self.format_commands(ctx, formatter)


class ReservedCommand(click.Command):
    """A subcommand of ``dbxdec backfill`` whose unknown-option error says how to reach
    a job of the same name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise click.UsageError(
                f"{exc.format_message()} To backfill a job named {self.name!r}, put an option "
                f"before its name: dbxdec backfill --start A --end B {self.name}",
                ctx,
            ) from None


@click.command("undo", cls=ReservedCommand)
@click.argument("backfill_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Restore without asking.")
@click.option(
    "--force",
    is_flag=True,
    help="Restore even over later commits of other writers, and empty tables the backfill created.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be restored; change nothing.")
@click.option(
    "-t",
    "--target",
    metavar="TARGET",
    help="Databricks, a detached backfill: the bundle target its job was deployed to (finds "
    "its journal).",
)
@click.option("--profile", help="Databricks: ~/.databrickscfg profile (default: the ledger's).")
@click.option("--host", help="Databricks: workspace URL (default: the ledger's).")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.005),
    default=5.0,
    show_default=True,
    help="Databricks: seconds between looks at the undo run.",
)
@click.option(
    "--warehouse-id",
    help="Databricks, a --downstream backfill: the SQL warehouse every table is checked "
    "through before any undo run (default: DATABRICKS_WAREHOUSE_ID).",
)
@pipelines_option
def undo_command(
    backfill_id: str,
    yes: bool,
    force: bool,
    dry_run: bool,
    target: str | None,
    profile: str | None,
    host: str | None,
    poll_interval: float,
    warehouse_id: str | None,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Restore every Delta table backfill ID wrote to its version before the backfill.

    \b
    Examples:
      dbxdec backfill undo sales-20240601T020000-1a2b --dry-run
      dbxdec backfill undo sales-20240601T020000-1a2b --yes

    Each table the job's tasks write through SparkTableIoManager goes back to the version
    before the backfill's first commit (Delta RESTORE); the commits are recognised by the
    run ids in the backfill's ledger. Undo refuses, naming the table and the commit, when
    another writer committed to a table after the backfill's first write (undo would
    discard that commit too), or when the backfill created a table (there is no earlier
    version: --force deletes its rows). Undoing twice does nothing the second time.

    A local backfill's tables are checked, shown and restored on the local Spark. A
    Databricks backfill is undone by a run of the deployed job on its own compute
    (job parameter dbxdec_order): each task restores the tables it writes, or fails
    with the reason when one needs --force. A --downstream backfill's undo is one such
    run per job, dependants first; every table of every job is checked first through a
    SQL warehouse (--warehouse-id), so a refusal anywhere launches no run. A detached
    backfill (no ledger here) is read from its journal in the workspace; it must have
    ended (cancel it first).

    Exit codes: 0 restored (or nothing to do), 1 the undo run failed, 2 unknown ID or
    refused, 130 not confirmed.
    """
    prepared = prepare_undo(
        backfill_id,
        root=project_root(project),
        project_loader=lambda: load_project(project, pipelines),
        host=host,
        profile=profile,
        target=target,
        poll_interval=poll_interval,
        warehouse_id=warehouse_id,
    )
    for line in prepared.lines():
        click.echo(line)
    if not prepared.count:
        click.echo("Nothing to undo.")
        return
    if dry_run:
        for refusal in [] if force else prepared.refusals():
            click.echo(f"Needs --force: {refusal}.")
        click.echo("Dry run: nothing was restored.")
        return
    refused = None if force else prepared.refused()
    if refused is not None:
        raise refused
    if not yes:
        count = prepared.count
        click.confirm(f"Restore {count} table{'s' * (count != 1)} as shown?", abort=True, err=True)
    for line in prepared.apply(force=force):
        click.echo(line)


@click.command("cost", cls=ReservedCommand)
@click.argument("backfill_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="JSON output (decimals as strings).")
@click.option(
    "--warehouse-id",
    help="SQL warehouse to read system.billing through (default: DATABRICKS_WAREHOUSE_ID "
    "or the profile's warehouse_id).",
)
@click.option("--profile", help="Databricks: ~/.databrickscfg profile (default: the ledger's).")
@click.option("--host", help="Databricks: workspace URL (default: the ledger's).")
@_project_option
def cost_command(
    backfill_id: str,
    as_json: bool,
    warehouse_id: str | None,
    profile: str | None,
    host: str | None,
    project: Path | None,
) -> None:
    """What backfill ID cost, per key and in total, at list price.

    \b
    Examples:
      dbxdec backfill cost sales-20240601T020000-1a2b --warehouse-id 1234abcd
      dbxdec backfill cost sales-20240601T020000-1a2b --json

    Reads system.billing.usage through a SQL warehouse for every run the backfill
    started (retries and failed attempts included), nets retractions and restatements,
    and prices each record at the effective list price in force at its usage_end_time. A run
    covering several keys is split equally among them (marked allocated); failed
    attempts are shown apart; records that name no run (all-purpose clusters) are
    reported as unattributed. Figures less than 12 hours old are flagged incomplete.

    Exit codes: 0 reported, 1 the billing query failed, 2 unknown ID, a local backfill
    or no warehouse.
    """
    root = project_root(project)
    report = backfill_cost(backfill_id, root, warehouse_id=warehouse_id, host=host, profile=profile)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    for line in report.lines():
        click.echo(line)


workspace_options = connection_record(
    None, "Bundle target (databricks.yml) the job was deployed to."
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


def register(group: click.Group) -> None:
    """Make ``group``'s ``backfill`` command a :class:`BackfillGroup` of the subcommands."""
    subcommands = [undo_command, cost_command, pause_command, unpause_command]
    subcommands += [cancel_command, watch_command]
    group.add_command(BackfillGroup(group.commands["backfill"], subcommands))
