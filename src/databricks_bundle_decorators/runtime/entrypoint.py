"""``dbxdec-run``: the wheel entry point every generated Databricks task calls, with the
task's named parameters as ``--name=value`` arguments::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=examples.sales_pipeline \\
        --dbxdec_run_id=550315892394120 \\
        --backfill_key=2024-01-01 --backfill_start_key= --backfill_exact=false

Only ``dbxdec_module`` is imported and only its job traced; the SparkSession is made on
first use. ``dbxdec_run_id`` identifies the run's Delta commits; the other parameters
are the run's job parameters. Exit codes: 0 success, 1 the task failed, 2 bad arguments
or unknown job/task.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from traceback import print_exception
from types import ModuleType

from ..backfill.check_report import CHECK_RESULTS_PARAM, TASK_RUN_ID_PARAM
from ..backfill.wire import (
    BACKFILL_RUN_TIME_PARAM,
    FOR_EACH_INPUT_PARAM,
    JOB_PARAM,
    MODULE_PARAM,
    RUN_ID_PARAM,
    TASK_PARAM,
)
from ..definitions import JobDefinition, TaskValueStore, default_registry
from ..definitions.contracts import LazySession, RunEnvironment
from ..definitions.job import check_results_table
from ..definitions.loader import import_module
from ..errors import DbxdecError, UsageError, did_you_mean
from .core.context import on_databricks
from .job_tables.tables import local_warehouse
from .running.dispatch import run_task, task_request
from .running.local import new_run_id, pin_run_time

RUN_ID_ENV = "DBXDEC_RUN_ID"
STATE_DIR_ENV = "DBXDEC_STATE_DIR"


@dataclass(frozen=True, slots=True)
class EntryArguments:
    """The parsed command line: which task of which job, and the job parameters."""

    job: str
    task: str
    module: str
    params: dict[str, str]
    for_each_element: str | None = None
    run_id: str | None = None
    check_results: str | None = None
    task_run_id: str = ""


def parse_arguments(argv: Sequence[str]) -> EntryArguments:
    """Parse ``--name=value`` (or, by hand, ``--name value``) arguments; a repeated name
    keeps its last value.

    Raises:
        UsageError: a positional argument, a missing value, or a missing
            ``--dbxdec_job``/``--dbxdec_task``/``--dbxdec_module``.
    """
    values: dict[str, str] = {}
    items = list(argv)
    index = 0
    while index < len(items):
        item = items[index]
        index += 1
        if not item.startswith("--") or item == "--":
            raise UsageError(f"unexpected argument {item!r}: dbxdec-run takes --name=value")
        name, sep, value = item[2:].partition("=")
        if not sep:
            if index >= len(items) or items[index].startswith("--"):
                raise UsageError(f"argument --{name} has no value (use --{name}=VALUE)")
            value = items[index]
            index += 1
        if not name:
            raise UsageError(f"argument {item!r} has no name")
        values[name] = value
    missing = [f"--{n}" for n in (JOB_PARAM, TASK_PARAM, MODULE_PARAM) if not values.get(n)]
    if missing:
        raise UsageError(f"dbxdec-run needs {', '.join(missing)}")
    job, task, module = values.pop(JOB_PARAM), values.pop(TASK_PARAM), values.pop(MODULE_PARAM)
    element = values.pop(FOR_EACH_INPUT_PARAM, None)
    run_id, results = values.pop(RUN_ID_PARAM, None), values.pop(CHECK_RESULTS_PARAM, None)
    task_run_id = values.pop(TASK_RUN_ID_PARAM, "")
    task_run_id = "" if "{{" in task_run_id else task_run_id  # unrendered: run by hand
    return EntryArguments(job, task, module, values, element, run_id, results, task_run_id)


def resolve_run_id(given: str | None, *, databricks: bool) -> str:
    """The run's id: ``--dbxdec_run_id`` unless still an unrendered ``{{...}}`` (runs
    sharing it would have Delta skip their writes), else ``$DBXDEC_RUN_ID``, else ``""``
    on Databricks or a new local id."""
    if given and "{{" not in given:
        return given
    from_env = os.environ.get(RUN_ID_ENV, "")
    if from_env or databricks:
        return from_env
    return new_run_id()


def find_job(module: ModuleType, name: str) -> JobDefinition:
    """The job ``name``: an attribute of ``module``, else in the default registry.

    Raises:
        UsageError: no such job; the message lists the module's jobs.
    """
    found = {
        value.name: value for value in vars(module).values() if isinstance(value, JobDefinition)
    }
    if name in found:
        return found[name]
    if name in default_registry:
        return default_registry.get(name)
    known = sorted(found) or default_registry.names
    raise UsageError(
        f"module {module.__name__} defines no job {name!r}.{did_you_mean(name, known)} "
        f"Jobs: {', '.join(known) or 'none'}"
    )


def load_job(module: str, job: str) -> JobDefinition:
    """Import ``module`` and find its job ``job``.

    Raises:
        UsageError: no such module, or no such job (the message lists the module's jobs).
    """
    found = import_module(module, not_found=f"--{MODULE_PARAM}={module}: module not found")
    return find_job(found, job)


def run_environment(databricks: bool, run_id: str = "", task_run_id: str = "") -> RunEnvironment:
    """A run's environment: Unity Catalog on Databricks, else the local warehouse; its
    Spark session is made on first use."""
    if databricks:
        from .session.spark import databricks_spark_session

        return RunEnvironment(
            LazySession(databricks_spark_session), Path("."), True, run_id, task_run_id=task_run_id
        )
    from .session.spark import local_spark_session

    session = LazySession(local_spark_session)
    return RunEnvironment(session, local_warehouse(), False, run_id, task_run_id=task_run_id)


def run(argv: Sequence[str], *, task_values: TaskValueStore | None = None) -> None:
    """Run the task the arguments name. Raises the errors :func:`main` reports.

    Args:
        task_values: Where task values live (default: ``dbutils`` on Databricks, JSON
            files locally).
    """
    arguments = parse_arguments(argv)
    job = load_job(arguments.module, arguments.job)
    if arguments.check_results:  # the project's table, baked in by codegen
        job.check_results = check_results_table(arguments.check_results, job.name, None)
    given = dict(arguments.params)
    if BACKFILL_RUN_TIME_PARAM not in given:  # run by hand: the run starts now
        given = pin_run_time(job, given)
    databricks = on_databricks()
    run_id = resolve_run_id(arguments.run_id, databricks=databricks)
    environment = run_environment(databricks, run_id, arguments.task_run_id)
    # an unknown task or parameter, a bad order or key: refused before Spark starts
    request = task_request(
        job, arguments.task, given, environment, for_each_element=arguments.for_each_element
    )
    if databricks:
        from .core.task_values import databricks_task_value_store

        values = task_values or databricks_task_value_store(environment.session.get)
    else:
        from .core.task_values import LocalTaskValueStore
        from .session.spark import prepare_local_spark

        prepare_local_spark()  # a session task code creates itself is a Delta one too
        state = Path(os.environ.get(STATE_DIR_ENV, str(environment.warehouse.parent)))
        values = task_values or LocalTaskValueStore(state / "task_values" / run_id)
    run_task(request, environment=environment, task_values=values)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: one ``Error:`` line and the exit code on failure (a
    failure in the task's own code prints its traceback first, for the job logs)."""
    exit_with(run, sys.argv[1:] if argv is None else argv, traceback=True)


def exit_with(
    run: Callable[[Sequence[str]], None], args: Sequence[str], *, traceback: bool
) -> None:
    """Run an entry point's ``run(args)``, then exit with 0 or the error's code."""
    try:
        run(args)
    except DbxdecError as exc:
        cause = exc.__cause__
        if traceback and cause is not None and not isinstance(cause, DbxdecError):
            print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
        print(f"Error: {exc.render()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    sys.exit(0)
