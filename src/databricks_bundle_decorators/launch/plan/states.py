"""One vocabulary for the states of runs, keys, backfills and their control.

Our own words spell it ``cancelled`` (ledgers, journals, status, events, JSON output);
the Jobs API's ``CANCELED`` appears only where Databricks' own values are read (the
Databricks backend, the emulator). The values are strings (``str`` enums), so ledgers,
journals and ``--json`` output hold the plain words and compare equal to them.
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A state written as its plain word: ``f"{state}"``, ``str(state)`` and
    ``repr(state)`` show it as the string it equals."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    __format__ = str.__format__  # type: ignore[assignment]


class RunState(_Word):
    """A run of a backfill, as a slice, an attempt or a backend's run goes through it.

    ``pending`` (a slice not yet submitted) -> ``submitting`` (written ahead, ``run-now``
    sent) -> ``queued`` (the backend holds it) -> ``running`` -> one of the ends:
    ``succeeded``, ``failed``, ``cancelled``, or ``rejected`` (refused before it existed).
    """

    PENDING = "pending"
    SUBMITTING = "submitting"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    REJECTED = "rejected"

    @property
    def ended(self) -> bool:
        """Whether the run is over (its state will not change)."""
        return self in _ENDED


_ENDED = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.REJECTED})

SLICE_STATES: tuple[RunState, ...] = (
    RunState.PENDING,
    RunState.SUBMITTING,
    RunState.RUNNING,
    RunState.SUCCEEDED,
    RunState.FAILED,
    RunState.CANCELLED,
)
"""The states a slice of a backfill takes (its latest attempt's; ``pending`` before one)."""


class KeyState(_Word):
    """A key of a job, as the status grid, reruns and catch-up see it: the state of its
    latest run, ``missing`` (never run) or ``unknown`` (beyond the run history)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RUNNING = "running"
    MISSING = "missing"
    UNKNOWN = "unknown"


class BackfillState(_Word):
    """A backfill as a whole."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class ControlState(_Word):
    """What a detached backfill's controller is told to do."""

    RUNNING = "running"
    PAUSED = "paused"
    CANCELLED = "cancelled"
