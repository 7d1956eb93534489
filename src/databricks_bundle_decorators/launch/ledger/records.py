"""The records a backfill ledger holds: each slice of the plan with its attempts, how to
reach the backend again, and the user's launch options (:mod:`.ledger` keeps them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ...backfill.wire import SwapOrder, keys_label, order_in
from ..plan.pacing import SchedulerOptions
from ..plan.request import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_RETRY_DELAY,
    DEFAULT_TARGET_SECONDS,
    Pacing,
)
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
    controller run drives them all from the journal alone); absent from older ledgers."""


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """The user's choices, kept to build the rerun and resume commands."""

    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    retries: int = 0
    retry_delay: float = DEFAULT_RETRY_DELAY
    retry_for: float | None = None  # --retry-for in seconds; absent from older ledgers
    halt_on_error: bool = False
    exact: bool = False
    batch_size: int = 1
    order: str = "forward"
    final_sync: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    canary: int = 0  # absent from ledgers written before --canary
    pause_schedule: bool = False  # absent from ledgers written before --pause-schedule
    force_rewrite: bool = False  # absent from ledgers written before --force-rewrite
    full_refresh: bool = False  # absent from ledgers written before --full-refresh
    batch_auto: bool = False  # --batch-size auto (batch_size: the latest choice); absent
    target_run_seconds: float = DEFAULT_TARGET_SECONDS  # from older ledgers
    tasks: str = ""  # --tasks/--skip-tasks, comma-separated ("": every task); absent before
    checks: bool = True  # False: --no-checks; absent before
    diff_gate: float | None = None  # --diff-gate percent (see .diff_gate); absent before

    def paced(self, pacing: Pacing) -> LaunchOptions:
        """These choices with the retries and halt that ``pacing`` sets (``None``: kept;
        a new backfill starts from this record's defaults, ``--resume`` from its ledger's)."""
        return replace(
            self,
            retries=self.retries if pacing.retries is None else pacing.retries,
            retry_delay=self.retry_delay if pacing.retry_delay is None else pacing.retry_delay,
            retry_for=self.retry_for if pacing.retry_for is None else pacing.retry_for,
            halt_on_error=pacing.halt_on_error or self.halt_on_error,
        )

    def for_scheduler(
        self, poll_interval: float, resend_after: float | None = None
    ) -> SchedulerOptions:
        """The scheduler's pacing for these choices, polling every ``poll_interval`` s
        (``resend_after``: see :class:`.pacing.SchedulerOptions`)."""
        return SchedulerOptions(
            max_concurrent=self.max_concurrent,
            retries=self.retries,
            retry_for=self.retry_for,
            retry_delay=self.retry_delay,
            halt_on_error=self.halt_on_error,
            poll_interval=poll_interval,
            max_poll_interval=max(poll_interval, 15.0),
            canary=self.canary,
            resend_after=resend_after,
            diff_gate=self.diff_gate,
        )
