"""``dbxdec run``: one job run on the local embedded Spark."""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from ...backfill.wire import KeyRange, TaskOrder, with_order
from ...errors import EnvironmentProblem, UsageError
from ...launch.backends.errors import require_local_spark
from ...launch.plan.history import keys_of_parameters
from ...launch.plan.states import KeyState
from ...launch.status.local_runs import LocalRun, record_local_run
from ...runtime.core.errors import TaskRunError
from ...runtime.running.local import TaskEvent, new_run_id, run_job_locally, slice_parameters
from ...runtime.session.delta_jars import (
    DELTA_JARS,
    DELTA_VERSION,
    cached_jars,
    ensure_delta_jars,
    jars_dir,
)
from ...runtime.session.spark import require_local_spark as require_spark_packages
from ..inputs.options import (
    Assignment,
    load_for_job,
    pipelines_option,
    spark_remote_option,
)

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
    config, registry = load_for_job(project, pipelines, job_name)
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
    run_id, started = new_run_id(), time.time()
    try:
        with _second_interrupt_cancels():
            click.echo(f"Running {job_name} locally (tables under {target})")
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
    failed = result.failed[0] if result.failed else None
    error = f"{failed.task_key}: {failed.error}" if failed is not None else ""
    state: KeyState = KeyState.SUCCEEDED if result.succeeded else KeyState.FAILED
    error = " ".join(error.split())[:500]  # one line: a record, not a log
    _record(
        config.root,
        job_name,
        LocalRun(result.run_id, result.keys, state, started, time.time(), error),
    )
    noun = "key" if len(result.keys) == 1 else "keys"
    keys = (
        f"{noun} {KeyRange.of(result.keys).label}" if result.keys else "the run (no backfill key)"
    )
    if result.succeeded and trigger is not None and not result.keys:
        click.echo(f"Run {result.run_id} succeeded: nothing changed since the last processed run.")
        return
    if result.succeeded:
        click.echo(f"Run {result.run_id} succeeded for {keys}.")
        return
    assert failed is not None  # a run that did not succeed has a failed task
    raise TaskRunError(f"task {failed.task_key!r} failed for {keys}: {failed.error}")


@contextmanager
def _second_interrupt_cancels() -> Iterator[None]:
    """As a backfill drains on the first Ctrl-C, a run goes on: the first SIGINT says so,
    the second cancels it (``KeyboardInterrupt``). The Spark JVM ignores SIGINT (PySpark
    starts it so), so a Ctrl-C during its start-up is one of these too."""
    pressed: list[int] = []

    def on_interrupt(number: int, frame: Any) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(number)
        click.echo("interrupt: the run goes on to its end (Ctrl-C again cancels it)", err=True)

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only
        return
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _record(root: Path, job: str, run: LocalRun) -> None:
    """Record ``run`` for ``status --local`` and catch-up; a failure to write only warns."""
    if not run.keys:
        return  # a job without backfill keys: nothing for a key's status
    try:
        record_local_run(root, job, run)
    except (OSError, ValueError) as exc:
        click.echo(f"Warning: could not record the run for dbxdec status: {exc}", err=True)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


@click.command("setup-spark")
@click.option(
    "--check",
    is_flag=True,
    help="Only verify; download nothing. Exit 3 when something is missing.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print nothing when everything is ready already (downloads and problems still print).",
)
def setup_spark(check: bool, quiet: bool) -> None:
    """Make this machine ready for local runs (`--local`): fetch the Delta Lake jars and
    check Java, PySpark and delta-spark.

    Local runs write Delta tables like Databricks does, so the embedded Spark needs
    delta-spark's jars. They are downloaded once from Maven Central (checked against its
    SHA-1 files; `mvn dependency:copy` is tried when the download fails) into a cache
    outside any project, shared by every project on the machine.

    \b
    Cache folder: $DBXDEC_JARS_DIR, else $XDG_CACHE_HOME/dbxdec/jars,
                  else ~/.cache/dbxdec/jars
    Repository:   $DBXDEC_MAVEN_REPOSITORY (default https://repo1.maven.org/maven2)

    Offline machines: copy the two jars into the cache folder, then run
    `dbxdec setup-spark --check`. Prints one line per jar; each problem is one
    `Error:` line, and the exit status is 3 when anything is missing.
    """
    folder = jars_dir()
    fetching = not check and cached_jars(folder) is None
    if fetching:
        names = ", ".join(jar.file_name for jar in DELTA_JARS)
        click.echo(f"Downloading the Delta Lake {DELTA_VERSION} jars ({names}) into {folder} ...")
    problems: list[str] = []
    java = shutil.which("java")
    if java is None:
        problems.append(
            "java not found on PATH: PySpark needs a Java 17 (or newer) runtime, e.g. "
            "`sudo apt-get install openjdk-17-jre-headless`"
        )
    packages: str | None = None
    try:
        require_spark_packages()
        packages = f"PySpark {_version('pyspark')}, delta-spark {_version('delta-spark')}"
    except EnvironmentProblem as exc:
        problems.append(exc.render())
    jars: list[Path] = []
    try:
        jars = ensure_delta_jars(download=not check)
    except EnvironmentProblem as exc:
        problems.append(exc.render())
    if quiet and not problems and not fetching:
        return  # `make demo` and `make test` run this every time: silent when nothing to do
    if java is not None:
        click.echo(f"java        {java}")
    if packages is not None:
        click.echo(f"packages    {packages}")
    for jar in jars:
        click.echo(f"Delta jar   {jar}")
    for problem in problems:
        click.echo(f"Error: {problem}", err=True)
    if problems:
        raise click.exceptions.Exit(EnvironmentProblem.exit_code)
    click.echo("Local Spark with Delta Lake is ready.")


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(run_command)
    group.add_command(setup_spark)
