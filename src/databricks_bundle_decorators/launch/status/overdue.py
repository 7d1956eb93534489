"""``dbxdec status JOB --overdue``: keys past their deadline whose latest run has not
succeeded, with a reason (no run, run failed, checks failed, still running, unknown)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from whenever import Instant

from ...backfill.check_report import CheckResult
from ...backfill.deadline import KeyDeadlines
from ...definitions import JobDefinition
from ...errors import UsageError
from ..ledger.ledger import Ledger
from ..plan.history import state_of
from ..plan.plan import selected_keys
from ..plan.states import KeyState
from .observed import with_unknown
from .status import JobStatus
from .status_grid import latest_attempts

OverdueReason = Literal["no run", "run failed", "checks failed", "still running", "unknown"]
_REASONS: dict[KeyState, OverdueReason] = {
    KeyState.MISSING: "no run",
    KeyState.FAILED: "run failed",
    KeyState.CANCELLED: "run failed",
    KeyState.RUNNING: "still running",
    KeyState.UNKNOWN: "unknown",
}


@dataclass(frozen=True, slots=True)
class OverdueKey:
    """A key past its due time (UTC) that has not succeeded; ``detail``: the failing checks,
    the run's error or ``cancelled``; ``run_id``: its latest run in a local ledger.
    """

    key: str
    due: datetime
    state: KeyState
    reason: OverdueReason
    detail: str = ""
    run_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The key as plain JSON data (``due`` in ISO 8601, UTC)."""
        return {**asdict(self), "due": self.due.isoformat()}


def failed_checks(ledgers: Iterable[Ledger]) -> dict[str, tuple[str, ...]]:
    """The failing checks reported for each key by its latest attempt, when it failed."""
    found: dict[str, tuple[str, ...]] = {}
    for key, (_, attempt) in latest_attempts(ledgers).items():
        if attempt.state != "failed":
            continue
        results = (CheckResult.from_json(item) for item in attempt.checks)
        names = tuple(r.check for r in results if not r.passed and r.key in (key, ""))
        if names:
            found[key] = names
    return found


def require_deadlines(job: JobDefinition) -> KeyDeadlines:
    """``job``'s deadlines.

    Raises:
        UsageError: the job has no deadline.
    """
    if job.deadlines is None:
        raise UsageError(
            f"job {job.name!r} has no deadline: declare @job(deadline=Deadline('09:00')) "
            "or Deadline(after=timedelta(...))"
        )
    return job.deadlines


def overdue_keys(
    job: JobDefinition,
    status: JobStatus,
    *,
    now: datetime,
    start: str | None = None,
    end: str | None = None,
    checks: Mapping[str, tuple[str, ...]] | None = None,
) -> list[OverdueKey]:
    """The keys of ``job`` from ``start`` to ``end`` (inclusive) due before ``now`` that have
    not succeeded, in key order; ``checks``: from :func:`failed_checks`.

    Raises:
        UsageError: the job has no deadline, or a bound is malformed.
    """
    deadlines = require_deadlines(job)
    keys = deadlines.due_keys(selected_keys(deadlines.backfill, start, end), Instant(now))
    history = status.history
    if status.horizon is not None:
        history = with_unknown(history, deadlines.backfill, keys, status.horizon)
    found = checks or {}
    overdue = []
    for key in keys:
        state = state_of(history, key)
        if state == "succeeded":
            continue
        detail = status.details.get(key)
        reason = _REASONS[state]
        text = ""
        if state == "failed" and key in found:
            reason, text = "checks failed", ", ".join(found[key])
        elif state == "cancelled":
            text = "cancelled"
        elif state == "failed" and detail is not None:
            text = detail.error
        due = deadlines.due(key).to_stdlib()
        run_id = (detail.run_id or "") if detail is not None and state != "missing" else ""
        overdue.append(OverdueKey(key, due, state, reason, text, run_id))
    return overdue
