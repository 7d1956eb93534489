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
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from contextlib import redirect_stdout
from typing import Any

from ..backfill.wire import REPORT_PREFIX, exit_value
from ..errors import DbxdecError
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

    The run's report lines end the notebook as its exit value.

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
        raise
    dbutils.notebook.exit(value)


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
