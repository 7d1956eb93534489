"""``dbxdec status JOB --overdue``: the keys past their deadline, each with its reason.

A key is overdue when its due time (``@job(deadline=...)``, see
:mod:`..backfill.deadline`) is before ``now`` and its latest run has not succeeded. The
key states are the status grid's (:func:`.status.job_status`: the workspace's run
history, then the local ledgers); the reason says what is known of the key:

* ``no run``: no run of the key is recorded;
* ``run failed``: its latest run failed or was cancelled;
* ``checks failed``: its latest run failed and the checks it reported for the key
  (kept in the backfill ledgers, :mod:`.check_reports`) include a failing one;
* ``still running``: a run of the key is queued or running;
* ``unknown``: no record, and its window ended before the workspace's run history
  begins (60 days, see :mod:`.horizon`): it may have run.

A key's state comes from the runs of that key alone: a backfill of an older key never
makes a newer overdue key look fresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
from .horizon import with_unknown
from .status import JobStatus
from .status_details import latest_attempts

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
    """A key past its due time that has not succeeded.

    Attributes:
        key: The backfill key.
        due: When it was due (UTC).
        state: Its state in the status grid.
        reason: Why it is overdue (see the module docstring).
        detail: The failing checks, the run's error, or ``cancelled``; ``""`` when
            nothing more is known.
        run_id: The latest run recorded in a local ledger, when there is one.
    """

    key: str
    due: datetime
    state: KeyState
    reason: OverdueReason
    detail: str = ""
    run_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The key as plain JSON data (``due`` in ISO 8601, UTC)."""
        return {
            "key": self.key,
            "due": self.due.isoformat(),
            "state": self.state,
            "reason": self.reason,
            "detail": self.detail,
            "run_id": self.run_id,
        }


def failed_checks(ledgers: Iterable[Ledger]) -> dict[str, tuple[str, ...]]:
    """For every key whose latest recorded attempt failed: the checks that attempt
    reported failing for the key (keys without one are left out)."""
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
    """The keys of ``job`` from ``start`` to ``end`` due before ``now`` that have not
    succeeded, in key order.

    Args:
        job: A job with a deadline.
        status: Its key states (:func:`.status.job_status`).
        now: The time to judge at (timezone-aware).
        start: First key to consider (inclusive; default: the definition's first).
        end: Last key to consider (inclusive; default: the definition's last).
        checks: The failing checks of keys whose latest run failed
            (:func:`failed_checks`).

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
