"""Check results as they cross task -> launcher: one value per check and key, and the report
line a task prints (read with ``jobs/runs/get-output``; locally collected in-process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .wire import read_reports, report_line

CHECK_RESULTS_PARAM = "dbxdec_check_results"
"""Named parameter of a generated task: the job's results table (``@job(check_results=)``
or the project's ``[tool.dbxdec] check_results``, which a cluster cannot read)."""
TASK_RUN_ID_PARAM = "dbxdec_task_run_id"
"""Named parameter: the task run's own id, as :data:`TASK_RUN_ID_VALUE`: it names the
attempt in the reports a task prints (:class:`CheckReport`)."""
TASK_RUN_ID_VALUE = "{{task.run_id}}"
"""Databricks' dynamic value reference for "the unique identifier assigned to the task run"
(https://docs.databricks.com/aws/en/jobs/dynamic-value-references): the id that
``runs/get`` lists for the task and ``runs/get-output`` reads."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one check on one key of one run.

    Attributes:
        check: The check's name, e.g. ``min_row_count(100)``.
        key: The slice (a key, ``STATIC:TIME``, or the run's keys label for a frame check).
        measured: What was measured; ``None`` for no number or only a lower bound.
        limit: What it had to be, e.g. ``>= 100``.
        passed: Whether the key passed the check.
        task: The task whose output was checked.
        run_id: The run that checked it.
        detail: Why it failed, ``no baseline: ...``, or rows quarantined; else empty.
        severity: ``error`` (fails the slice) or ``warn`` (only recorded).

    Example:
        >>> result = CheckResult("min_row_count(1)", "2024-01-01", 3.0, ">= 1", True, "t", "r1")
        >>> CheckResult.from_json(result.to_json()) == result
        True
    """

    check: str
    key: str
    measured: float | None
    limit: str
    passed: bool
    task: str = ""
    run_id: str = ""
    detail: str = ""
    severity: str = "error"

    def to_json(self) -> dict[str, Any]:
        """The result as plain JSON data (the ledger's and the report line's form)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        """A result from :meth:`to_json`'s data.

        Raises:
            KeyError, TypeError, ValueError: the data is not a result.
        """
        measured = data["measured"]
        return cls(
            str(data["check"]),
            str(data["key"]),
            None if measured is None else float(measured),
            str(data["limit"]),
            bool(data["passed"]),
            str(data.get("task", "")),
            str(data.get("run_id", "")),
            str(data.get("detail", "")),
            "warn" if data.get("severity") == "warn" else "error",
        )


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The check results of one task run, as one output line.

    It names the run (``dbxdec_run_id``), task key and task run id; serverless logs may hold
    other tasks' output, so a reader keeps only its task run's reports (:meth:`of_task_run`).

    Example:
        >>> result = CheckResult("unique(id)", "2024-01-01", 0.0, "= 0", True)
        >>> report = CheckReport((result,), run="5001-0", task="clean", task_run_id="7")
        >>> report.to_line()[:33]
        'dbxdec-report: {"kind": "checks",'
        >>> CheckReport.from_lines("noise\\n" + report.to_line()) == [report]
        True
    """

    results: tuple[CheckResult, ...]
    run: str = ""
    task: str = ""
    task_run_id: str = ""

    @property
    def identity(self) -> tuple[str, str, str]:
        """``(run, task, task run id)``: what judged the results."""
        return (self.run, self.task, self.task_run_id)

    def to_line(self) -> str:
        """The report as one output line."""
        body: dict[str, Any] = {"results": [result.to_json() for result in self.results]}
        for name, value in zip(_IDENTITY, self.identity, strict=True):
            if value:
                body[name] = value
        return report_line("checks", body)

    @classmethod
    def from_lines(cls, text: str) -> list[CheckReport]:
        """Every report line in a task's output (other lines are ignored).

        Raises:
            ValueError: a line starts like a report but is not one.
        """
        reports = []
        for line, body in read_reports(text, "checks"):
            try:
                results = tuple(CheckResult.from_json(item) for item in body["results"])
                run, task, task_run_id = (str(body.get(name, "")) for name in _IDENTITY)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"a malformed check report line: {line[:120]!r}") from exc
            reports.append(cls(results, run, task, task_run_id))
        return reports

    def is_of(self, job_run_id: str, task: str, task_run_id: str) -> bool:
        """Whether this report was printed by task run ``task_run_id`` (task ``task``) of
        job run ``job_run_id``. A report that names nothing (printed by a dbxdec before
        reports named their run) is taken for the task run whose log holds it."""
        if self.task_run_id:
            return self.task_run_id == task_run_id
        if self.task and self.task != task:
            return False
        return not self.run or self.run.split("-", 1)[0] == job_run_id

    @classmethod
    def of_task_run(
        cls, text: str, job_run_id: str, task: str, task_run_id: str
    ) -> list[CheckReport]:
        """The reports of one task run in logs ``text``, each once (other tasks' are ignored).

        Raises:
            ValueError: a line starts like a report but is not one.
        """
        kept: dict[object, CheckReport] = {}
        for report in cls.from_lines(text):
            if report.is_of(job_run_id, task, task_run_id):
                # a report without a name is told apart from another only by its content
                kept.setdefault(report.identity if any(report.identity) else report, report)
        return list(kept.values())


_IDENTITY = ("run", "task", "task_run_id")


def results_of(reports: Sequence[CheckReport]) -> tuple[CheckResult, ...]:
    """Every result of ``reports``, in order."""
    return tuple(result for report in reports for result in report.results)
