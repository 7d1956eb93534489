"""``dbxdec run``: one job run on the local embedded Spark."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ...backfill.wire import KeyRange, TaskOrder, with_order
from ...errors import UsageError
from ...launch.backends.errors import require_local_spark
from ...launch.plan.history import keys_of_parameters
from ...launch.plan.states import KeyState
from ...launch.status.local_runs import LocalRun, record_local_run
from ...runtime.core.errors import TaskRunError
from ...runtime.running.local import TaskEvent, new_run_id, run_job_locally, slice_parameters
from ..inputs.options import Assignment, load_project, pipelines_option
from ..inputs.spark_remote_option import spark_remote_option

_MARKS = {"succeeded": "ok", "failed": "FAILED", "skipped": "skipped"}


def _print_event(event: TaskEvent) -> None:
    result = event.result
    if result is None:
        return
    line = f"  {result.task_key:<28} {_MARKS[result.status]:<9} {result.seconds:7.2f}s"
    if result.status != "succeeded" and result.error:
        line += f"  {result.error}"
    click.echo(line)


@click.command("run")
@click.argument("job_name", metavar="JOB")
@click.option("--key", default=None, metavar="KEY", help="Backfill key of the run (one slice).")
@click.option("--start", default=None, metavar="KEY", help="First key of a ranged run.")
@click.option("--end", default=None, metavar="KEY", help="Last key of a ranged run (inclusive).")
@click.option(
    "--task",
    "tasks",
    multiple=True,
    metavar="TASK",
    help="Run only this task (repeatable); inputs come from tables earlier runs wrote.",
)
@click.option("--exact", is_flag=True, help="No lookback and no schedule-gap expansion.")
@click.option(
    "--force-rewrite",
    is_flag=True,
    help="Rewrite the keys that append-once outputs (write='append_once') already hold "
    "instead of skipping them (in the run's order, job parameter dbxdec_order).",
)
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    type=Assignment(),
    metavar="NAME=VALUE",
    help="Set a job parameter (repeatable; a repeated name: the last wins).",
)
@click.option(
    "--trigger",
    "trigger",
    type=click.Choice(["table_update", "file_arrival"]),
    default=None,
    help="Simulate the job's TableUpdate trigger from the local tables' current versions, "
    "or its FileArrival trigger on the trigger's local folder.",
)
@click.option(
    "--from-version",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="With --trigger: process the watched tables' versions from N on (first run).",
)
@click.option("--local", is_flag=True, help="Run on the embedded local Spark (required).")
@spark_remote_option
@click.option(
    "--warehouse",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of local tables (default: [tool.dbxdec] warehouse or .dbxdec/warehouse).",
)
@pipelines_option
def run_command(
    job_name: str,
    key: str | None,
    start: str | None,
    end: str | None,
    tasks: tuple[str, ...],
    exact: bool,
    force_rewrite: bool,
    params: tuple[tuple[str, str], ...],
    trigger: str | None,
    from_version: int | None,
    local: bool,
    warehouse: Path | None,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Run one run of JOB locally: every task in dependency order on the embedded Spark.

    The run is recorded under .dbxdec/runs, so 'dbxdec status --local' and 'dbxdec
    catchup --local' see the keys it wrote.

    \b
    Examples:
      dbxdec run sales_pipeline --key 2024-01-31 --local
      dbxdec run sales_pipeline --start 2024-01-01 --end 2024-01-31 --local
      dbxdec run sales_pipeline --key 2024-01-31 --task clean_events --local
      dbxdec run sales_pipeline --key 2024-01-31 --force-rewrite --local
      dbxdec run orders_job --trigger table_update --from-version 1 --local
      dbxdec run landing_job --trigger file_arrival --local

    A ranged run (--start/--end) processes all its keys in one run, as a ranged
    Databricks run does. Tables are Delta tables under the local warehouse. Exit
    status 1 when a task fails (the message names the task and the key).
    """
    if not local:
        raise UsageError(
            "dbxdec run executes on the local Spark only: add --local. On Databricks, deploy "
            f"the bundle and use 'dbxdec backfill {job_name} --start A --end B'"
        )
    require_local_spark()
    run_params = slice_parameters(key=key, start=start, end=end, exact=exact, params=dict(params))
    if force_rewrite:
        run_params = with_order(run_params, TaskOrder(force_rewrite=True))
    config, registry = load_project(project, pipelines)
    target = warehouse.resolve() if warehouse is not None else config.warehouse
    if from_version is not None and trigger != "table_update":
        raise UsageError("--from-version goes with --trigger table_update")
    if trigger == "file_arrival":
        from ...runtime.triggers.local_trigger import simulated_file_arrival

        run_params.update(simulated_file_arrival(registry.get(job_name)))
    elif trigger is not None:
        from ...runtime.triggers.local_trigger import simulated_trigger

        job = registry.get(job_name)
        run_params.update(simulated_trigger(job, target, from_version=from_version))
    click.echo(f"Running {job_name} locally (tables under {target})")
    run_id, started = new_run_id(), time.time()
    try:
        result = run_job_locally(
            registry,
            job_name,
            params=run_params,
            tasks=list(tasks) or None,
            warehouse=target,
            on_event=_print_event,
            state_dir=target.parent,
            run_id=run_id,
        )
    except KeyboardInterrupt:
        backfill = registry.get(job_name).backfill
        if backfill is not None:  # the keys it was writing, for status and catchup
            written = keys_of_parameters(backfill, run_params, started=started)
            run = LocalRun(run_id, written, KeyState.CANCELLED, started, time.time(), "interrupted")
            _record(config.root, job_name, run)
        raise
    failed_tasks = result.failed
    error = f"{failed_tasks[0].task_key}: {failed_tasks[0].error}" if failed_tasks else ""
    state: KeyState = KeyState.SUCCEEDED if result.succeeded else KeyState.FAILED
    run = LocalRun(result.run_id, result.keys, state, started, time.time(), one_line_error(error))
    _record(config.root, job_name, run)
    keys = _label(result.keys)
    if result.succeeded and trigger is not None and not result.keys:
        click.echo(f"Run {result.run_id} succeeded: nothing changed since the last processed run.")
        return
    if result.succeeded:
        click.echo(f"Run {result.run_id} succeeded for {keys}.")
        return
    failed = result.failed[0]
    raise TaskRunError(f"task {failed.task_key!r} failed for {keys}: {failed.error}")


def _record(root: Path, job: str, run: LocalRun) -> None:
    """Record ``run`` for ``status --local`` and catch-up; a failure to write only warns
    (the run itself is done: its tables are written)."""
    if not run.keys:
        return  # a job without backfill keys: nothing for a key's status
    try:
        record_local_run(root, job, run)
    except (OSError, ValueError) as exc:
        click.echo(f"Warning: could not record the run for dbxdec status: {exc}", err=True)


def one_line_error(error: str) -> str:
    """``error`` on one line, at most 500 characters (a record, not a log)."""
    return " ".join(error.split())[:500]


def _label(keys: tuple[str, ...]) -> str:
    if not keys:
        return "the run (no backfill key)"
    return f"{'key' if len(keys) == 1 else 'keys'} {KeyRange.of(keys).label}"


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(run_command)
