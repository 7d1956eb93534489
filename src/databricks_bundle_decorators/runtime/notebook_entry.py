"""The entry of a generated notebook task: ``dbxdec-run``'s run, fed from widgets.

Task values (``dbutils.jobs.taskValues``) are documented for Python notebooks only
("Use task values to pass information between tasks",
https://docs.databricks.com/aws/en/jobs/task-values), so a task that sets or reads them is
generated as a notebook task (:mod:`..bundle.notebook_task`) whose last cell is::

    from databricks_bundle_decorators.runtime.notebook_entry import run_notebook
    run_notebook(dbutils, ["dbxdec_job", "dbxdec_task", ..., "backfill_key"])

The notebook task's ``base_parameters`` carry the same names and values as a wheel task's
``named_parameters``; a notebook reads them with ``dbutils.widgets.get`` (the Jobs API's
``NotebookTask.base_parameters``: "Retrieve these parameters in a notebook using
dbutils.widgets.get"), and job parameters reach a notebook task the same way
("Parameterize jobs", https://docs.databricks.com/aws/en/jobs/job-parameters: job
parameters are pushed down to tasks that accept key-value parameters).

A run that fails (a check failed, the task raised) never reaches ``exit()``, so a failed
notebook task run returns no reports; in a backfill's run, the entry keeps them in the
backfill's journal folder instead (:mod:`..backfill.wire.report` says why there),
where the launcher's one reader of a task run's reports looks for a failed notebook task.
"""

from __future__ import annotations

import base64
import io
import sys
from collections.abc import Mapping, Sequence
from contextlib import redirect_stdout
from typing import Any

from ..backfill.check_report import TASK_RUN_ID_PARAM
from ..backfill.wire import (
    FAILED_REPORTS_DIR,
    REPORT_PREFIX,
    exit_value,
    failed_reports_name,
    journal_folder_path,
    order_in,
)
from ..errors import DbxdecError
from .core.job_auth import job_run_client
from .core.task_values import DbutilsTaskValueStore
from .entrypoint import run


def notebook_arguments(dbutils: Any, names: Sequence[str]) -> list[str]:
    """``--name=value`` for every parameter ``name``, read from the notebook's widgets."""
    return [f"--{name}={dbutils.widgets.get(name)}" for name in names]


def run_notebook(dbutils: Any, names: Sequence[str]) -> None:
    """Run the task the widgets name, with task values through the notebook's ``dbutils``.

    Args:
        dbutils: The notebook's ``dbutils`` (widgets and ``jobs.taskValues``).
        names: The parameter names the task was generated with.

    The run's report lines end the notebook as its exit value; when the run fails they
    are kept in its backfill's journal folder (:func:`keep_failed_reports`).

    Raises:
        DbxdecError: the run failed, or its reports exceed the 5 MB kept of an exit
            value; its one-line message is printed first, and the exception fails the
            notebook task (a notebook has no exit code).
    """
    arguments = notebook_arguments(dbutils, names)
    printed = _Tee(sys.stdout)
    try:
        with redirect_stdout(printed):
            run(arguments, task_values=DbutilsTaskValueStore(dbutils))
        reports = [line for line in printed.lines() if line.startswith(REPORT_PREFIX)]
        try:
            value = exit_value(reports)
        except ValueError as exc:
            raise DbxdecError(str(exc)) from None
    except DbxdecError as exc:
        print(f"Error: {exc.render()}", file=sys.stderr)
        reports = [line for line in printed.lines() if line.startswith(REPORT_PREFIX)]
        keep_failed_reports(dict(a[2:].split("=", 1) for a in arguments), reports)
        raise
    dbutils.notebook.exit(value)


def keep_failed_reports(params: Mapping[str, str], reports: Sequence[str]) -> None:
    """Keep the report lines of a failed task run in its backfill's journal folder:
    ``<journal>/reports/task-<task run id>.json`` (a JSON list, as the exit value is).

    Nothing is kept without reports, outside a backfill (no backfill id in the run's
    order) or without the task run's id. The job's id is the task run's
    (``runs/get-output`` ``metadata.job_id``). A write that fails is one line on stderr:
    the task's own error goes on.
    """
    order = order_in(params)
    backfill_id = getattr(order, "backfill_id", "")
    task_run_id = params.get(TASK_RUN_ID_PARAM, "")
    if not reports or not backfill_id or not task_run_id.isdigit():
        return
    try:
        from databricks.sdk.service.workspace import ImportFormat

        client = job_run_client()
        job_id = client.jobs.get_run_output(int(task_run_id)).metadata.job_id  # type: ignore[union-attr]
        folder = f"{journal_folder_path(int(job_id or 0), backfill_id)}/{FAILED_REPORTS_DIR}"
        client.workspace.mkdirs(folder)
        client.workspace.import_(
            f"{folder}/{failed_reports_name(int(task_run_id))}",
            content=base64.b64encode(exit_value(reports).encode()).decode(),
            format=ImportFormat.AUTO,  # by the extension: a .json is a file (SDK docstring)
            overwrite=True,
        )
    except Exception as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        print(
            f"dbxdec: the failed run's reports could not be kept in the workspace ({reason}): "
            "the launcher will not see them",
            file=sys.stderr,
        )


class _Tee(io.StringIO):
    """Keeps what the run prints while passing it on to the notebook's own output."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(text)
        return super().write(text)

    def flush(self) -> None:
        self._out.flush()

    def lines(self) -> list[str]:
        return self.getvalue().splitlines()
