"""The check results of a Databricks run, read back from its tasks' output
(:func:`.task_output.task_outputs`) into the slice's ledger record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backfill.check_report import CheckReport, CheckResult, results_of
from ...definitions import JobDefinition
from .task_output import task_outputs

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


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
