"""The check results of a Databricks run, read back from its tasks' output.

Each task of a run prints a :class:`~..backfill.check_report.CheckReport` line at the end
(see :mod:`..runtime.checks.check_results`); the launcher reads every task run's output with
:func:`.task_output.task_outputs` (a for-each task's: its iterations'), as it does for a
presence run (:mod:`.presence`), and keeps the results in the slice's ledger record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backfill.check_report import CheckReport, CheckResult, results_of
from ...definitions import JobDefinition
from .task_output import task_outputs

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def read_check_results(client: WorkspaceClient, run_id: int) -> tuple[CheckResult, ...]:
    """Every check result the tasks of job run ``run_id`` reported, in task order.

    Serverless task logs may hold other tasks' output, so each task run's logs count
    only the reports that task run printed (:meth:`CheckReport.of_task_run`), each
    once. A task whose output cannot be read (it never ran, its output expired) or
    holds a malformed report line reports nothing.
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
