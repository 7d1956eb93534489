"""Check evaluation: the one place where a task's checks are judged.

An IoManager whose ``evaluates_checks`` is true counts the checks' metrics in its own
write (:meth:`TaskChecks.metering`) and has :meth:`TaskChecks.judge` judge them before
it commits; for any other output the dispatcher calls :meth:`TaskChecks.evaluate`
between the call and the write.

Example:
    >>> from databricks_bundle_decorators.runtime.checks.shipped import MinRowCount
    >>> TaskChecks("clean", (MinRowCount(1),)).judge(  # doctest: +NORMALIZE_WHITESPACE
    ...     {"2024-01-01": {ROWS_METRIC: 3}}, keys=["2024-01-01", "2024-01-02"],
    ...     frame=lambda: None)
    Traceback (most recent call last):
    databricks_bundle_decorators.runtime.core.errors.CheckFailed: task 'clean': check
    min_row_count(1) failed for key 2024-01-02: 0 rows, expected at least 1
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...backfill.check_report import CheckResult
from ...definitions.contracts import ROWS_METRIC, Check, quarantines, severity_of
from ...errors import counted
from ..core.errors import CheckFailed, TaskRunError
from .metering import Measured, Metering

QUARANTINED_METRIC = "quarantined"
"""Per slice and quarantining check (prefixed ``c<index>_``): rows moved to quarantine."""
_COLLECTED: ContextVar[list[CheckResult] | None] = ContextVar("dbxdec_checks", default=None)


@dataclass(frozen=True, slots=True)
class SliceFailure:
    """A check that failed for one key (``None``: unpartitioned output)."""

    check: str
    key: str | None
    detail: str
    severity: str = "error"

    def render(self) -> str:
        where = f" for key {self.key}" if self.key is not None else ""
        return f"check {self.check} failed{where}: {self.detail}"


def slice_failures(
    measured: Mapping[str | None, Mapping[str, Any]],
    checks: Sequence[Check],
    *,
    keys: Sequence[str | None],
) -> list[SliceFailure]:
    """Failures of every check for every key in ``keys`` (a key with no rows has 0 rows)."""
    failures: list[SliceFailure] = []
    for key in keys:
        values = measured.get(key, {ROWS_METRIC: 0})
        for index, check in enumerate(checks):
            detail = check.failure(values, f"c{index}_")
            if detail is not None:
                failures.append(SliceFailure(check.name, key, detail, severity_of(check)))
    return failures


@contextlib.contextmanager
def collecting_check_results() -> Iterator[list[CheckResult]]:
    """Collect the results of every check judged in this context (failing ones
    included) into the list it yields; an enclosing collection receives them too."""
    outer = _COLLECTED.get()
    found: list[CheckResult] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)
        if outer is not None:
            outer.extend(found)


def _passing_note(check: Check, values: Mapping[str, Any], prefix: str) -> str:
    """How many rows a quarantining check moved out, or why a check that compares keys
    had no baseline."""
    if quarantines(check):
        moved = int(values.get(f"{prefix}{QUARANTINED_METRIC}") or 0)
        return f"{counted(moved, 'row')} quarantined" if moved else ""
    note = getattr(check, "passing_note", None)
    return str(note(values) or "") if callable(note) else ""


def _judges_frame(check: Check) -> bool:
    """Whether ``check`` is judged once on the whole output rather than per slice."""
    return type(check).frame_failure is not Check.frame_failure


@dataclass(frozen=True, slots=True)
class TaskChecks:
    """The checks of one task run's output (metric names prefixed ``c<index>_``)."""

    task_key: str
    checks: tuple[Check, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(self.checks)

    def metering(
        self,
        slice_column: str | None,
        extra: Mapping[str, Any] | None = None,
        *,
        static_column: str | None = None,
    ) -> Metering:
        """What to count for the checks (plus ``extra`` counters) per slice."""
        return Metering(self.checks, slice_column, dict(extra or {}), static_column)

    def _result(
        self, check: Check, key: str, measured: float | None, limit: str, detail: str, passed: bool
    ) -> CheckResult:
        return CheckResult(
            check.name, key, measured, limit, passed, self.task_key, "", detail, severity_of(check)
        )

    def judge(
        self,
        measured: Measured,
        *,
        keys: Sequence[str | None],
        frame: Callable[[], Any],
        label: str | None = None,
        target: str | None = None,
    ) -> list[CheckResult]:
        """Judge every check for every key of ``keys`` (a key without metrics has 0
        rows); frame checks run on ``frame()`` when no slice failed a check of severity
        ``error``. The results (one per check and key, failing ones included) are
        returned and added to the enclosing :func:`collecting_check_results`.

        Args:
            label: The run's keys, e.g. ``2024-01-01..2024-01-30``: the key of frame
                checks and of an unpartitioned output.
            target: The table that would have been written, for the message.

        Raises:
            CheckFailed: a check of severity ``error`` failed (the first failure, with
                how many more there are).
        """
        if not self.checks:
            return []
        results: list[CheckResult] = []
        for key in keys:
            values = measured.get(key, {ROWS_METRIC: 0})
            for index, check in enumerate(self.checks):
                if _judges_frame(check):
                    continue
                prefix = f"c{index}_"
                detail = check.failure(values, prefix)
                value, limit = check.measurement(values, prefix)
                note = _passing_note(check, values, prefix) if detail is None else ""
                name = key if key is not None else (label or "")
                passed = detail is None
                results.append(self._result(check, name, value, limit, detail or note, passed))
        failures = slice_failures(measured, self.checks, keys=keys)
        if all(f.severity == "warn" for f in failures):
            output = frame()
            for check in self.checks:
                detail = check.frame_failure(output)
                if detail is not None:
                    failures.append(SliceFailure(check.name, label, detail, severity_of(check)))
                if _judges_frame(check):
                    results.append(
                        self._result(check, label or "", None, "", detail or "", detail is None)
                    )
        collected = _COLLECTED.get()
        if collected is not None:
            collected.extend(results)
        failures = [f for f in failures if f.severity == "error"]  # warnings are recorded
        if failures:
            more = (
                f" (and {counted(len(failures) - 1, 'more failure')})" if len(failures) > 1 else ""
            )
            written = f"; nothing was written to {target}" if target is not None else ""
            raise CheckFailed(f"task {self.task_key!r}: {failures[0].render()}{more}{written}")
        return results

    def evaluate(self, output: Any, *, label: str | None) -> None:
        """Measure ``output`` as one slice and judge it (for outputs no IoManager fuses).

        Raises:
            TaskRunError: ``output`` is not a Spark DataFrame, or a check quarantines.
            CheckFailed: a check failed.
        """
        if not self.checks:
            return
        quarantining = [c.name for c in self.checks if quarantines(c)]
        if quarantining:
            raise TaskRunError(
                f"task {self.task_key!r}: check {quarantining[0]} has on_fail='quarantine', "
                "which needs a SparkTableIoManager output (rows go to <table>__quarantine)"
            )
        if not hasattr(output, "groupBy"):
            raise TaskRunError(
                f"task {self.task_key!r} has checks but returned a {type(output).__name__}; "
                "checks apply to Spark DataFrames"
            )
        measured = self.metering(None).measure(output)
        renamed = {label: measured[None]} if None in measured else {}
        self.judge(renamed, keys=[label], frame=lambda: output, label=label)
