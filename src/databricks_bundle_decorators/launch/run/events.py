"""Events the scheduler emits, one per state change, for progress displays and logs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ...errors import LocalStateProblem
from ..backends.errors import BackfillClaimLost

EventKind = Literal[
    "submitted",
    "succeeded",
    "failed",
    "retrying",
    "cancelled",
    "draining",
    "cancelling",
    "warning",
    "unreachable",
    "reachable",
]


@dataclass(frozen=True, slots=True)
class Counts:
    """Slices by progress: ``done + failed + running + blocked + remaining == total``
    (``blocked``: ``--downstream`` slices that wait for a failed one, and never run)."""

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    blocked: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.done - self.failed - self.running - self.blocked)

    def to_json(self) -> dict[str, int]:
        """The counts and ``remaining``; ``blocked`` only when some are (``--downstream``)."""
        data = {**asdict(self), "remaining": self.remaining}
        if not self.blocked:
            del data["blocked"]
        return data


@dataclass(frozen=True, slots=True)
class LaunchEvent:
    """One state change of a backfill, ``at`` epoch seconds, with the progress right after
    it and the slice (``label``: ``2024-01-01..2024-01-07``, ``final sync``), its attempt
    (1-based), run and ``seconds`` taken (``succeeded``/``failed``) when it is about one."""

    kind: EventKind
    at: float
    counts: Counts = field(default_factory=Counts)
    label: str = ""
    keys: tuple[str, ...] = ()
    attempt: int | None = None
    run_id: str | None = None
    url: str | None = None
    seconds: float | None = None
    message: str = ""

    @property
    def detail(self) -> str:
        """``message`` without a leading ``"<kind>:"`` that would repeat the kind.

        >>> LaunchEvent("draining", 0.0, message="draining: no new runs").detail
        'no new runs'
        """
        prefix = f"{self.kind}:"
        if self.message.lower().startswith(prefix):
            return self.message[len(prefix) :].lstrip()
        return self.message

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["event"] = data.pop("kind")
        data["keys"] = list(self.keys)
        data["counts"] = self.counts.to_json()
        return {k: v for k, v in data.items() if v not in (None, "", [])}


@dataclass(frozen=True, slots=True)
class FailedSlice:
    """A slice that did not succeed, for the summary."""

    label: str
    keys: tuple[str, ...]
    error: str
    run_id: str | None = None
    url: str | None = None

    @property
    def reason(self) -> str:
        """The error without a leading ``FAILED:`` (the result state the summary's
        ``FAILED`` already says); other result states (``TIMEDOUT: ...``) stay.

        >>> FailedSlice("2024-04-03", ("2024-04-03",), "FAILED: table locked").reason
        'table locked'
        """
        error = self.error.strip()
        if error.upper().startswith("FAILED:"):
            error = error[len("FAILED:") :].lstrip()
        return error or "no error message"


@dataclass(frozen=True, slots=True)
class LaunchSummary:
    """The outcome of a backfill session (``state``: ``succeeded``, ``failed`` or
    ``interrupted``; ``seconds``: its wall time).

    Attributes:
        durations: Seconds per succeeded slice label, for the slowest-slices list.
        failed: Slices that failed or were left unfinished.
        unsaved: Why the ledger could not be saved (a full disk): exit code 6.
        checks: One line on the runs' checks (empty when there are none).
        claim_lost: Why the backfill's claim was lost: exit code 7.
    """

    backfill_id: str
    job: str
    state: str
    counts: Counts
    seconds: float
    durations: Mapping[str, float] = field(default_factory=dict)
    failed: tuple[FailedSlice, ...] = ()
    rerun_command: str | None = None
    resume_command: str | None = None
    unsaved: str = ""
    checks: str = ""
    claim_lost: str = ""
    blocked: tuple[str, ...] = ()  # --downstream: "b 2024-02-01 (blocked by a 2024-01-31, …)"

    @property
    def exit_code(self) -> int:
        if self.unsaved:
            return LocalStateProblem.exit_code
        if self.claim_lost:
            return BackfillClaimLost.exit_code
        return {"succeeded": 0, "interrupted": 130}.get(self.state, 1)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["event"] = "summary"
        data["exit_code"] = self.exit_code
        data["counts"] = self.counts.to_json()
        data["failed"] = [{**asdict(f), "keys": list(f.keys)} for f in self.failed]
        if not self.blocked:  # a one-job backfill's summary is as it was
            del data["blocked"]
        return data
