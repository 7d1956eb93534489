"""The entry of a generated notebook task: ``dbxdec-run``'s run, fed from widgets.

Task values are documented for Python notebooks only ("Use task values to pass
information between tasks", https://docs.databricks.com/aws/en/jobs/task-values), so a
task that uses them is a notebook task whose last cell is::

    from databricks_bundle_decorators.runtime.notebook_entry import run_notebook
    run_notebook(dbutils, ["dbxdec_job", "dbxdec_task", ..., "backfill_key"])

Its ``base_parameters`` (job parameters are pushed down too: "Parameterize jobs",
https://docs.databricks.com/aws/en/jobs/job-parameters) are read with
``dbutils.widgets.get`` (the Jobs API's ``NotebookTask.base_parameters``). A failed
notebook run returns no exit value, so its reports are kept in the backfill's journal
folder (:mod:`..backfill.wire.report`), where the launcher's reader looks.
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


def run_notebook(dbutils: Any, names: Sequence[str]) -> None:
    """Run the task the widgets ``names`` name, with the notebook's task values; its
    report lines are the notebook's exit value (on failure: :func:`keep_failed_reports`).

    Raises:
        DbxdecError: the run failed, or its reports exceed the 5 MB of an exit value
            (printed first; the exception fails the notebook task).
    """
    arguments = [f"--{name}={dbutils.widgets.get(name)}" for name in names]
    printed = _Tee(sys.stdout)
    try:
        with redirect_stdout(printed):
            run(arguments, task_values=DbutilsTaskValueStore(dbutils))
        try:
            value = exit_value(printed.reports())
        except ValueError as exc:
            raise DbxdecError(str(exc)) from None
    except DbxdecError as exc:
        print(f"Error: {exc.render()}", file=sys.stderr)
        keep_failed_reports(dict(a[2:].split("=", 1) for a in arguments), printed.reports())
        raise
    dbutils.notebook.exit(value)


def keep_failed_reports(params: Mapping[str, str], reports: Sequence[str]) -> None:
    """Keep a failed task run's report lines in its backfill's journal folder, as
    ``<journal>/reports/task-<task run id>.json`` (a JSON list, as the exit value is).

    Nothing is kept without reports, a backfill id or the task run's id; a failed write
    is one line on stderr.
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
    """Keeps what the run prints while passing it on to the notebook's output."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(text)
        return super().write(text)

    def flush(self) -> None:
        self._out.flush()

    def reports(self) -> list[str]:
        return [line for line in self.getvalue().splitlines() if line.startswith(REPORT_PREFIX)]
