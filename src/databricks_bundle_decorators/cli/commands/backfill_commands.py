"""``dbxdec backfill`` and ``catchup`` over :mod:`databricks_bundle_decorators.launch`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...bundle.project import project_root
from ...errors import UsageError
from ...launch.launcher import plan_backfill
from ...launch.operations.downstream_triggers import with_trigger_hold
from ...launch.plan.history import RERUN_MODES, RerunMode
from ...launch.plan.options import LaunchOptions, Pacing
from ...launch.plan.plan import ORDERS, Order
from ...launch.plan.plan_summary import plan_selection
from ...launch.plan.request import (
    CATCHUP_BY,
    BackfillRequest,
    BatchSize,
    CatchupBy,
    Connection,
    ResumeRequest,
)
from ...launch.prepare.resume import prepare_resume
from ...launch.steer.steering import has_ledger, prepare_journal_resume
from ..inputs.options import (
    KeyList,
    all_keys_option,
    batch_size_options,
    canary_option,
    confirm_every_key,
    diff_gate_option,
    given_on_command_line,
    load_for_job,
    load_project,
    local_connection_record,
    no_checks_option,
    option_group,
    param_option,
    pipelines_option,
    target_seconds,
    task_options,
    with_pacing,
)
from ..output.launch_output import (
    detach_option,
    launch_or_detach,
    nothing_to_run,
    refuse_local_detach,
)
from ..output.plan_output import downstream_option, dry_run_options, print_plan

F = TypeVar("F", bound=Callable[..., Any])


_plan_extras = option_group(
    click.option(
        "--allow-missing-upstream",
        is_flag=True,
        help="Run although a job this one reads from (dbxdec graph) has no data for keys "
        "the backfill's windows read. Without it such a backfill is refused before "
        "anything launches, naming each upstream job's missing keys and the command that "
        "fills them. A job that never ran has no data for any key.",
    ),
    click.option(
        "--pause-schedule",
        is_flag=True,
        help="Pause the job's schedule (or trigger) while the backfill runs and restore it "
        "when it ends, is interrupted or, after a crash, on the next dbxdec command for the "
        "job. Without it, a scheduled job keeps one of its max_concurrent_runs free for the "
        "scheduled run. Pausing is a jobs/update: it needs CAN MANAGE (or IS OWNER) on the "
        "job, checked before anything starts (launching runs needs CAN MANAGE RUN).",
    ),
    click.option(
        "--force-trigger-pause",
        is_flag=True,
        help="With --pause-schedule: pause a deployed table-update trigger the project does "
        "not declare. Its condition (ANY_UPDATED/ALL_UPDATED) cannot be read back from the "
        "workspace, so the trigger is restored without it (a warning says so); without this "
        "flag such a pause is refused.",
    ),
    param_option,
    dry_run_options,
    click.option(
        "--dbu-per-hour",
        type=click.FloatRange(min=0, min_open=True),
        metavar="RATE",
        help="DBU per hour of one run (whole cluster), for the --dry-run estimate's DBU hours "
        "(no API gives a node type's rate).",
    ),
)
_launch_extras = option_group(
    click.option(
        "--force",
        is_flag=True,
        help="Take over the claim of another backfill of the job on some of the same keys "
        "once it is stale: expired (its launcher stopped renewing it) or left by a launcher "
        "that died on this machine. Refused while that claim is live.",
    ),
    detach_option,
    local_connection_record("Run on the embedded local Spark."),
    with_pacing,
    click.option("--json", "as_json", is_flag=True, help="One JSON object per event."),
    pipelines_option,
)


def command_context_args(project: Path | None, pipelines: tuple[str, ...]) -> tuple[str, ...]:
    args = ("--project", str(project)) if project is not None else ()
    return (*args, *(arg for module in pipelines for arg in ("--pipelines", module)))


def plan_and_launch(
    request: BackfillRequest,
    project: Path | None,
    pipelines: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
    all_runs: bool,
    ask: bool = False,
) -> None:
    """Plan ``request``; print the plan on a dry run (``all_runs``: every run), else launch
    it; with ``ask``, a request naming no keys is confirmed first (:func:`confirm_every_key`)."""
    refuse_local_detach(request)
    if request.options.force_trigger_pause and not request.options.pause_schedule:
        raise UsageError(
            "--force-trigger-pause applies only with --pause-schedule: add --pause-schedule, "
            "or drop --force-trigger-pause"
        )
    config, registry = load_for_job(project, pipelines, request.job)
    if ask:
        confirm_every_key(registry, request)
    prepared = plan_backfill(
        request, root=config.root, registry=registry, warehouse=config.warehouse, dry_run=dry_run
    )
    if dry_run:
        backfill = registry.get(request.job).backfill
        selection = plan_selection(backfill, request) if backfill is not None else None
        print_plan(prepared, as_json, all_runs=all_runs, selection=selection)
        return
    launch_or_detach(prepared, as_json, nothing_to_run(request), root=config.root)


@click.command("catchup")
@click.argument("job")
@click.option("--start", metavar="KEY", help="Only keys from KEY (inclusive).")
@click.option("--end", metavar="KEY", help="Only keys up to KEY (inclusive).")
@click.option(
    "--by",
    type=click.Choice(CATCHUP_BY),
    default="runs",
    show_default=True,
    help="runs: keys without a successful run in the job's history; data: keys whose "
    "partitions are missing or empty in the job's output tables.",
)
@batch_size_options(
    "Consecutive keys to catch up per run (a run never spans a key that is done), or"
)
@click.option("--order", type=click.Choice(ORDERS), default="forward", show_default=True)
@click.option("--exact", is_flag=True, help="Bypass lookback and schedule-gap expansion.")
@canary_option
@_plan_extras
@_launch_extras
def catchup_command(
    job: str,
    start: str | None,
    end: str | None,
    by: CatchupBy,
    batch_size: BatchSize,
    target_run_length: float | None,
    order: Order,
    exact: bool,
    canary: int,
    allow_missing_upstream: bool,
    pause_schedule: bool,
    force_trigger_pause: bool,
    params: tuple[tuple[str, str], ...],
    dry_run: bool,
    all_runs: bool,
    dbu_per_hour: float | None,
    force: bool,
    connection: Connection,
    pacing: Pacing,
    as_json: bool,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Run every key of JOB's backfill definition that is not done yet.

    With --by runs (the default) a key is done when its latest run succeeded: keys
    whose latest run failed and keys never run are launched, keys with a run in
    progress are left alone, and so are unknown keys (on Databricks: ended more than
    60 days ago, the workspace's run history, with no run nor local ledger record;
    --keys names them, --by data finds the absent ones). With --by data a key is done
    when every output table of the job has rows in its partition: read from the local
    Delta tables with --local, on Databricks by one run of the deployed job (job
    parameter dbxdec_order) that lists the partitions present and writes
    nothing; a --dry-run runs it too.
    Same options and exit codes as dbxdec backfill.
    """
    request = BackfillRequest(
        job,
        start=start,
        end=end,
        batch_size=batch_size,
        catchup=True,
        by=by,
        options=LaunchOptions(
            order=order,
            target_run_seconds=target_seconds(batch_size, target_run_length),
            exact=exact,
            params=dict(params),
            canary=canary,
            pause_schedule=pause_schedule,
            force_trigger_pause=force_trigger_pause,
        ),
        dbu_per_hour=dbu_per_hour,
        connection=connection,
        pacing=pacing,
        context_args=command_context_args(project, pipelines),
        force=force,
        allow_missing_upstream=allow_missing_upstream,
    )
    plan_and_launch(request, project, pipelines, dry_run, as_json, all_runs)


_PLAN_OPTIONS = (  # what --resume refuses: the ledger has the plan
    "start end keys order batch_size target_run_length rerun exact force_rewrite "
    "no_checks tasks skip_tasks final_sync full_refresh canary diff_gate params dry_run "
    "all_runs new pause_schedule force_trigger_pause dbu_per_hour all_keys downstream "
    "allow_missing_upstream"
)


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
@_plan_extras
@downstream_option
@click.option("--resume", "resume_id", metavar="ID", help="Finish backfill ID (dbxdec backfills).")
@click.option(
    "--new",
    is_flag=True,
    help="Start a new backfill even though the last one over the same keys did not finish "
    "(without it that is refused, pointing at --resume).",
)
@_launch_extras
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
    allow_missing_upstream: bool,
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
        given = given_on_command_line(ctx, tuple(_PLAN_OPTIONS.split()))
        if job is not None or given:
            extra = ", ".join(([repr(job)] if job is not None else []) + given)
            raise UsageError(
                f"--resume ID takes no JOB and no plan options (the ledger has them); drop {extra}"
            )
        request = ResumeRequest(resume_id, connection, pacing, context_args, force)
        root = project_root(project)
        detached = not (connection.local or has_ledger(root, resume_id))
        prepare = prepare_journal_resume if detached else prepare_resume
        prepared = prepare(
            request, root=root, project_loader=lambda: load_project(project, pipelines)
        )
        prepared = with_trigger_hold(prepared, root=root)  # --downstream
        launch_or_detach(prepared, as_json, root=root)
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
        allow_missing_upstream=allow_missing_upstream,
    )
    ask = not (dry_run or all_keys)
    plan_and_launch(backfill, project, pipelines, dry_run, as_json, all_runs, ask)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (backfill_command, catchup_command):
        group.add_command(command)
