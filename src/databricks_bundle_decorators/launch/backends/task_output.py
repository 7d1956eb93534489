"""The one reader of a task run's output: the text its reports were written to.

A task's reports (:mod:`...backfill.wire.report`) reach ``jobs/runs/get-output`` by one
channel per task type, chosen when the task was generated: a wheel task's stdout is its
``logs`` ("The output from tasks that write to standard streams ... python_wheel_task"), a
notebook task's is not ("It's not supported for the notebook_task", databricks-sdk
``jobs.RunOutput.logs``), so it hands its reports to ``dbutils.notebook.exit()``, returned
as ``notebook_output.result`` (``jobs.NotebookOutput.result``). Which channel is read is
decided by the task run's settings in ``runs/get`` (``RunTask.notebook_task``), never by
which field is empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backfill.wire import exit_value_text

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import RunTask


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
        notebook = output.notebook_output
        return exit_value_text(notebook.result if notebook is not None else None)
    return output.logs or ""
