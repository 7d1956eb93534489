"""One vocabulary for the states of runs, keys, backfills and their control: ``str`` enums
that equal their plain words (``cancelled``; the Jobs API's ``CANCELED`` is read only
by the Databricks backend and the emulator).
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A state shown as the string it equals (``str``, ``repr``, ``format``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    __format__ = str.__format__  # type: ignore[assignment]


class RunState(_Word):
    """A run: ``pending`` -> ``submitting`` -> ``queued`` -> ``running`` -> ``succeeded``,
    ``failed``, ``cancelled``, or ``rejected`` (refused before it existed).
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
"""The states a slice takes (its latest attempt's; ``pending`` before one)."""


class KeyState(_Word):
    """A key: its latest run's state, ``missing`` (never run) or ``unknown`` (beyond history);
    ``stale``: it succeeded, but its table's provenance says the task's code or the data it
    read changed since (``launch/provenance``; judged for local tables only).
    """

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RUNNING = "running"
    MISSING = "missing"
    UNKNOWN = "unknown"
    STALE = "stale"


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
