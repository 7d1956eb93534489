"""``dbxdec catchup``: launch the keys of a job that are not done yet (a thin wrapper
over :mod:`databricks_bundle_decorators.launch`, like :mod:`.backfill_commands`)."""

from __future__ import annotations

from pathlib import Path

import click

from ...launch.plan.options import LaunchOptions, Pacing
from ...launch.plan.plan import ORDERS, Order
from ...launch.plan.request import (
    CATCHUP_BY,
    BackfillRequest,
    BatchSize,
    CatchupBy,
    Connection,
)
from ..inputs.canary_options import canary_option
from ..inputs.options import (
    batch_size_options,
    param_option,
    pipelines_option,
    target_seconds,
    with_pacing,
)
from ..output.detach_output import detach_option
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
@pause_option
@force_trigger_pause_option
@param_option
@dry_run_options
@dbu_option
@force_option
@detach_option
@with_connection
@with_pacing
@json_option
@pipelines_option
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
    )
    plan_and_launch(request, project, pipelines, dry_run, as_json, all_runs)
