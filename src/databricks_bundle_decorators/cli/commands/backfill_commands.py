"""``dbxdec backfill`` and ``catchup`` (:mod:`.catchup_commands`): thin wrappers over
:mod:`databricks_bundle_decorators.launch` (``backfills`` and ``status`` live in
:mod:`.report_commands`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...bundle.project import project_root
from ...errors import UsageError
from ...launch.operations.downstream_triggers import with_trigger_hold
from ...launch.plan.history import RERUN_MODES, RerunMode
from ...launch.plan.options import LaunchOptions, Pacing
from ...launch.plan.plan import ORDERS, Order
from ...launch.plan.request import BackfillRequest, BatchSize, Connection, ResumeRequest
from ...launch.prepare.resume import prepare_resume
from ...launch.steer.steering import has_ledger, prepare_journal_resume
from ..inputs.canary_options import canary_option, diff_gate_option
from ..inputs.full_range import all_keys_option
from ..inputs.options import (
    KeyList,
    batch_size_options,
    given_on_command_line,
    load_project,
    no_checks_option,
    param_option,
    pipelines_option,
    target_seconds,
    task_options,
    with_pacing,
)
from ..output.detach_output import (
    detach_option,
    launch_or_detach,
)
from ..output.downstream_output import downstream_option
from ..output.plan_output import dry_run_options
from .backfill_shared import (
    command_context_args,
    dbu_option,
    force_option,
    force_trigger_pause_option,
    json_option,
    pause_option,
    plan_and_launch,
    with_connection,
)
from .catchup_commands import catchup_command

F = TypeVar("F", bound=Callable[..., Any])


_PLAN_OPTIONS = (
    "start",
    "end",
    "keys",
    "order",
    "batch_size",
    "target_run_length",
    "rerun",
    "exact",
    "force_rewrite",
    "no_checks",
    "tasks",
    "skip_tasks",
    "final_sync",
    "full_refresh",
    "canary",
    "diff_gate",
    "params",
    "dry_run",
    "all_runs",
    "new",
    "pause_schedule",
    "force_trigger_pause",
    "dbu_per_hour",
    "all_keys",
    "downstream",
)
"""What ``--resume`` refuses: the ledger has the plan."""


@click.command("backfill")
@click.argument("job", required=False)
@click.option("--start", metavar="KEY", help="First key (inclusive).")
@click.option("--end", metavar="KEY", help="Last key (inclusive).")
@click.option("--keys", type=KeyList(), default=(), help="Exactly these keys.")
@all_keys_option
@click.option("--order", type=click.Choice(ORDERS), default="forward", show_default=True)
@batch_size_options("Consecutive keys per run (ranged runs via backfill_start_key), or")
@click.option(
    "--rerun",
    type=click.Choice(RERUN_MODES),
    default="all",
    show_default=True,
    help="all keys, only keys whose latest run failed, or only keys never run (not keys "
    "older than the workspace's 60-day run history with no record, unless named by --keys).",
)
@click.option("--exact", is_flag=True, help="Bypass lookback and schedule-gap expansion.")
@click.option(
    "--force-rewrite",
    is_flag=True,
    help="Rewrite the keys that append-once outputs (write='append_once') already hold "
    "instead of skipping them: one replaceWhere commit over each run's keys (in each "
    "run's dbxdec_order). Other outputs always replace. Kept for --resume.",
)
@task_options
@no_checks_option
@click.option("--final-sync", is_flag=True, help="One more run with no key at the end.")
@click.option(
    "--full-refresh",
    is_flag=True,
    help="Rebuild the job's tables from the plan's keys only: the runs write staging "
    "tables, and one last run, once every run succeeded, checks each staging table whole "
    "and replaces its table in one commit (readers see the old table or the new one). "
    "Interrupted or failed, the tables are unchanged; --resume continues the staging.",
)
@canary_option
@diff_gate_option
@pause_option
@force_trigger_pause_option
@param_option
@dry_run_options
@dbu_option
@downstream_option
@click.option("--resume", "resume_id", metavar="ID", help="Finish backfill ID (dbxdec backfills).")
@click.option(
    "--new",
    is_flag=True,
    help="Start a new backfill even though the last one over the same keys did not finish "
    "(without it that is refused, pointing at --resume).",
)
@force_option
@detach_option
@with_connection
@with_pacing
@json_option
@pipelines_option
@click.pass_context
def backfill_command(
    ctx: click.Context,
    job: str | None,
    start: str | None,
    end: str | None,
    keys: tuple[str, ...],
    all_keys: bool,
    order: Order,
    batch_size: BatchSize,
    target_run_length: float | None,
    rerun: RerunMode,
    exact: bool,
    force_rewrite: bool,
    no_checks: bool,
    tasks: tuple[str, ...],
    skip_tasks: tuple[str, ...],
    final_sync: bool,
    full_refresh: bool,
    canary: int,
    diff_gate: float | None,
    pause_schedule: bool,
    force_trigger_pause: bool,
    params: tuple[tuple[str, str], ...],
    dry_run: bool,
    all_runs: bool,
    dbu_per_hour: float | None,
    downstream: bool,
    resume_id: str | None,
    new: bool,
    force: bool,
    connection: Connection,
    pacing: Pacing,
    as_json: bool,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Run JOB for a range of backfill keys, up to --max-concurrent runs at once.

    \b
    Examples:
      dbxdec backfill sales --start 2024-01-01 --end 2024-12-31 --max-concurrent 8
      dbxdec backfill sales --keys 2024-02-03,2024-02-09 --local
      dbxdec backfill sales --start 2024-01-01 --end 2024-03-31 --batch-size 7 --dry-run
      dbxdec backfill sales --start 2024-01-01 --end 2024-12-31 --batch-size auto --dry-run
      dbxdec backfill sales --start 2024-01-01 --end 2024-12-31 --canary 2
      dbxdec backfill sales --start 2024-01-01 --end 2024-12-31 --full-refresh
      dbxdec backfill sales --keys 2023-06-01 --force-rewrite
      dbxdec backfill sales --start 2024-01-01 --end 2024-01-31 --tasks daily_revenue
      dbxdec backfill sales --rerun failed --start 2024-01-01 --end 2024-12-31
      dbxdec backfill --resume sales-20240601T020000-1a2b

    Every backfill gets an id and a ledger under .dbxdec/backfills/. Ctrl-C once
    drains (no new runs, in-flight runs finish); twice cancels in-flight runs.
    A running backfill claims its keys: launching another backfill of the job over
    any of them (from any machine; locally, any backfill of the job) is refused
    until it ends, unless its claim is stale (--force).
    Exit codes: 0 all succeeded, 1 some runs failed, 2 usage error, 4 credentials or
    permission refused, 5 workspace unreachable, 6 ledger unwritable or damaged (a full
    disk stops launching; runs in flight are watched to their end), 7 claim taken over
    by another launcher (an outage alone never loses it), 130 interrupted.
    """
    context_args = command_context_args(project, pipelines)
    if resume_id is not None:
        given = given_on_command_line(ctx, _PLAN_OPTIONS)
        if job is not None or given:
            extra = ", ".join(([repr(job)] if job is not None else []) + given)
            raise UsageError(
                f"--resume ID takes no JOB and no plan options (the ledger has them); drop {extra}"
            )
        request = ResumeRequest(resume_id, connection, pacing, context_args, force)
        detached = not (connection.local or has_ledger(project_root(project), resume_id))
        prepared = (prepare_journal_resume if detached else prepare_resume)(
            request,
            root=project_root(project),
            project_loader=lambda: load_project(project, pipelines),
        )
        prepared = with_trigger_hold(prepared, root=project_root(project))  # --downstream
        launch_or_detach(prepared, as_json, root=project_root(project))
        return
    if job is None:
        raise UsageError("missing JOB (or --resume ID)")
    backfill = BackfillRequest(
        job,
        start=start,
        end=end,
        keys=keys,
        batch_size=batch_size,
        rerun=rerun,
        options=LaunchOptions(
            order=order,
            target_run_seconds=target_seconds(batch_size, target_run_length),
            exact=exact,
            force_rewrite=force_rewrite,
            checks=not no_checks,
            final_sync=final_sync,
            full_refresh=full_refresh,
            params=dict(params),
            canary=canary,
            diff_gate=diff_gate,
            pause_schedule=pause_schedule,
            force_trigger_pause=force_trigger_pause,
        ),
        tasks=tasks,
        skip_tasks=skip_tasks,
        dbu_per_hour=dbu_per_hour,
        connection=connection,
        pacing=pacing,
        context_args=context_args,
        force=force,
        new=new,
        downstream=downstream,
    )
    ask = not (dry_run or all_keys)
    plan_and_launch(backfill, project, pipelines, dry_run, as_json, all_runs, ask)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (backfill_command, catchup_command):
        group.add_command(command)
