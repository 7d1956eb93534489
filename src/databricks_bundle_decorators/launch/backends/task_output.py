"""The one reader of a task run's output: a wheel task's stdout is its ``logs`` (databricks-sdk
``jobs.RunOutput.logs``: "It's not supported for the notebook_task"), a notebook's reports its
``dbutils.notebook.exit()`` value or, when it failed, the journal folder's copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ...backfill.check_report import CheckReport, CheckResult, results_of
from ...backfill.wire import FAILED_REPORTS_DIR, exit_value_text, failed_reports_name, order_in
from ...definitions import JobDefinition
from ..ledger.journal import journal_place

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import RunOutput, RunTask

T = TypeVar("T")


def task_output(client: WorkspaceClient, task: RunTask) -> str:
    """The report lines task run ``task`` (from ``runs/get``'s ``tasks``) wrote, as text.

    Raises:
        ValueError: a notebook task's exit value is not a list of report lines.
        DatabricksError: the output cannot be read.
    """
    if task.run_id is None:  # the task never started
        return ""
    output = client.jobs.get_run_output(task.run_id)
    if task.notebook_task is not None:
        if _ended_without_success(task):
            return exit_value_text(_kept_reports(client, output, task.run_id))
        notebook = output.notebook_output
        return exit_value_text(notebook.result if notebook is not None else None)
    return output.logs or ""


def task_outputs(client: WorkspaceClient, task: RunTask) -> list[tuple[RunTask, str]]:
    """Each run that wrote task run ``task``'s reports, with their text: the task run
    itself, or every iteration of a for-each task (in order), with its own ``run_id``.

    Raises:
        ValueError: a notebook task's exit value is not a list of report lines.
        DatabricksError: the output cannot be read.
    """
    loop = task.for_each_task
    if loop is None or task.run_id is None:
        return [(task, task_output(client, task))]
    nested = loop.task  # the nested task's type chooses its iterations' channel
    iterations = [
        dataclasses.replace(
            iteration,
            notebook_task=nested.notebook_task,
            python_wheel_task=nested.python_wheel_task,
        )
        for iteration in client.jobs.get_run(task.run_id).iterations or []
    ]
    return [(iteration, task_output(client, iteration)) for iteration in iterations]


def _ended_without_success(task: RunTask) -> bool:
    result = task.state.result_state if task.state is not None else None
    return result is not None and result.value not in ("SUCCESS", "SUCCESS_WITH_FAILURES")


def _kept_reports(client: WorkspaceClient, output: RunOutput, task_run_id: int) -> str | None:
    """What a failed notebook task run kept in its backfill's journal folder, if any."""
    run = output.metadata
    if run is None or run.job_id is None:
        return None
    params = {p.name: p.value or p.default or "" for p in (run.job_parameters or []) if p.name}
    backfill_id = getattr(order_in(params), "backfill_id", "")
    if not backfill_id:
        return None
    place = journal_place(client, run.job_id, backfill_id).child(FAILED_REPORTS_DIR)
    return place.read(failed_reports_name(task_run_id))


def task_reports(
    client: WorkspaceClient,
    run_id: int,
    parse: Callable[[str], list[T]],
    failed: tuple[type[Exception], str],
    tasks: list[RunTask] | None = None,
) -> list[T]:
    """What ``parse`` reads from the output of every task of run ``run_id`` (``tasks``:
    the run's, when just read); a line it refuses raises ``failed``'s error, naming the
    task and the ``failed[1]`` run (``presence``, ``undo``, ...)."""
    found: list[T] = []
    for task in (client.jobs.get_run(run_id).tasks if tasks is None else tasks) or []:
        if task.run_id is None:
            continue
        try:
            for _, text in task_outputs(client, task):
                found += parse(text)
        except ValueError as exc:
            error, what = failed
            raise error(f"task {task.task_key!r} of {what} run {run_id}: {exc}") from None
    return found


def read_check_results(client: WorkspaceClient, run_id: int) -> tuple[CheckResult, ...]:
    """Every check result the tasks of job run ``run_id`` reported, in task order: each task
    run counts only the reports it printed (serverless logs may hold others'), each once; a
    task whose output cannot be read or is malformed reports nothing.
    """
    from databricks.sdk.errors.base import DatabricksError

    run = client.jobs.get_run(run_id)
    reports: list[CheckReport] = []
    for task in run.tasks or []:
        if task.run_id is None:
            continue
        try:
            found = [
                report
                for one, logs in task_outputs(client, task)
                for report in CheckReport.of_task_run(
                    logs, str(run_id), one.task_key, str(one.run_id)
                )
            ]
        except (DatabricksError, ValueError):
            continue
        reports += found  # a report names its task run: it passes for that one only
    return results_of(reports)


def job_has_checks(job: JobDefinition) -> bool:
    """Whether any task of ``job`` declares checks (else no run reports results)."""
    graph = job.graph
    return any(graph[key].definition.checks for key in graph.nodes)
