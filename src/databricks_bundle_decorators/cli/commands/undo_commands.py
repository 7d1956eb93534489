"""``dbxdec backfill undo ID``, and the ``backfill`` group that holds it beside the
launcher command (``dbxdec backfill JOB ...``, ``dbxdec backfill --resume ID``)."""

from __future__ import annotations

from pathlib import Path

import click

from ...bundle.project import project_root
from ...launch.operations.undo import prepare_undo
from ..inputs.options import load_project, pipelines_option

_LAUNCHER_ARGS = "dbxdec.backfill.launcher_args"


class BackfillGroup(click.Group):
    """``backfill``: a subcommand when the first argument names one (``undo``), else the
    launcher command with every argument as given.

    So ``dbxdec backfill sales --start A --end B`` and ``dbxdec backfill --resume ID`` keep
    working (usage lines and errors still say ``dbxdec backfill``), and
    ``dbxdec backfill undo ID`` is the undo command. A job literally named like a
    subcommand is reached with an option before its name:
    ``dbxdec backfill --start A --end B undo``.

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
        """``dbxdec backfill --help``: the launcher's own help, then the subcommands."""
        self.default.format_help(ctx, formatter)
        self.format_commands(ctx, formatter)


class ReservedCommand(click.Command):
    """A subcommand of ``dbxdec backfill`` (``undo``, ``cost``) whose unknown-option error
    says how to reach a job of the same name."""

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


def register(group: click.Group) -> None:
    """Make ``group``'s ``backfill`` command (registered before) a :class:`BackfillGroup`
    holding ``undo``."""
    group.add_command(BackfillGroup(group.commands["backfill"], [undo_command]))
