"""The records a backfill ledger holds: each slice of the plan with its attempts, how to
reach the backend again, and the backfill's options (:mod:`.ledger` keeps them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ...backfill.wire import SwapOrder, keys_label, order_in
from ..plan.states import RunState

BackendKind = Literal["databricks", "local"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One submission of a slice. Times are seconds since the epoch.

    ``submitted_at`` is the launcher's; ``started_at`` and ``ended_at`` are the run's own
    (the backend's record) when known, else ``ended_at`` is when the launcher saw the end.
    ``rejected``: the backend refused the submission, so no run exists.
    """

    number: int
    token: str
    state: RunState = RunState.SUBMITTING
    run_id: str | None = None
    url: str | None = None
    submitted_at: float | None = None
    ended_at: float | None = None
    error: str = ""
    started_at: float | None = None
    gave_up: str = ""  # which retry budget was spent, e.g. "retries spent: 3 of 3"; or ""
    checks: Sequence[Mapping[str, Any]] = ()  # check_report.CheckResult.to_json() each

    @property
    def is_open(self) -> bool:
        """Whether the outcome is still unknown (submitted or running)."""
        return self.state in ("submitting", "running")

    @property
    def seconds(self) -> float | None:
        start = self.submitted_at if self.started_at is None else self.started_at
        if start is None or self.ended_at is None:
            return None
        return max(0.0, self.ended_at - start)


@dataclass(frozen=True, slots=True)
class SliceRecord:
    """A slice of the plan and its attempts so far."""

    index: int
    keys: tuple[str, ...]
    parameters: Mapping[str, str]
    attempts: tuple[Attempt, ...] = ()
    job: str | None = None  # a --downstream slice's job (None: the ledger's job)
    waits_for: tuple[int, ...] = ()  # --downstream: slices that must succeed first

    @property
    def label(self) -> str:
        """The keys' label (``--downstream``: ``b 2024-01-31``); ``"full-refresh swap"``."""
        if self.job is not None:
            return f"{self.job} {keys_label(self.keys)}"
        if not self.keys and isinstance(order_in(self.parameters), SwapOrder):
            return "full-refresh swap"
        return keys_label(self.keys)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def state(self) -> RunState:
        last = self.last
        if last is None:
            return RunState.PENDING
        return RunState.FAILED if last.state == RunState.REJECTED else last.state

    def attempt(self, number: int) -> Attempt:
        """The attempt numbered ``number``."""
        return next(a for a in self.attempts if a.number == number)

    def with_attempt(self, attempt: Attempt) -> SliceRecord:
        """This slice with ``attempt`` added, or replacing the attempt of its number."""
        kept = tuple(a for a in self.attempts if a.number != attempt.number)
        return replace(self, attempts=(*kept, attempt))


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """How to reach the backend again on ``--resume`` (no credentials)."""

    kind: BackendKind
    job_id: int | None = None
    remote_name: str | None = None
    host: str | None = None
    profile: str | None = None
    target: str | None = None
    job_ids: Mapping[str, int] = field(default_factory=dict)
    """``--downstream`` on Databricks: every job's deployed id, by dbxdec job name (a
    controller run drives them all from the journal alone); empty for one job."""
