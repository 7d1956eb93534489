"""What the scheduler needs from a place that runs jobs: submit, poll in batches, cancel."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ...backfill.check_report import CheckResult
from ..plan.states import RunState
from .errors import BackendUnavailable, SubmitRejected

if TYPE_CHECKING:
    from ..ledger.ledger import Attempt

__all__ = [
    "TERMINAL_STATES",
    "Backend",
    "BackendUnavailable",
    "EndsNotified",
    "RunState",
    "RunStatus",
    "SubmitRejected",
    "SubmitRequest",
    "Submitted",
]

TERMINAL_STATES: frozenset[RunState] = frozenset(
    {RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED}
)


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    """One run to start: its idempotency ``token`` (the same token returns the first run), job
    parameters, ``label`` for messages, ``first_sent`` (epoch seconds, when a resumed
    attempt's token was first sent) and ``job`` (``--downstream``; ``None``: the backend's).
    """

    token: str
    parameters: Mapping[str, str]
    label: str
    first_sent: float | None = None
    job: str | None = None


@dataclass(frozen=True, slots=True)
class Submitted:
    """A started (or found again) run."""

    run_id: str
    url: str | None = None


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A run's state as last seen: ``message`` explains a failure; ``started_at``/``ended_at``
    are the run's own (epoch seconds), not when the launcher noticed; ``checks``: the
    results the run judged.
    """

    state: RunState
    message: str = ""
    url: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    checks: tuple[CheckResult, ...] = ()

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def onto(self, attempt: Attempt) -> Attempt:
        """``attempt`` with the run's own start, end and check results."""
        checks = tuple(result.to_json() for result in self.checks) or attempt.checks
        return replace(attempt, started_at=self.started_at, ended_at=self.ended_at, checks=checks)


class Backend(Protocol):
    """A place to run one job's runs."""

    @property
    def kind(self) -> str:
        """``databricks`` or ``local``."""

    def submit(self, request: SubmitRequest) -> Submitted:
        """Start a run (or return the run already started with ``request.token``); thread-safe.

        Raises:
            SubmitRejected: the request was refused and no run exists.
            BackendUnavailable: no answer; the same token is re-submitted, not counted a try.
            Exception: it is unknown whether a run exists; the same token is re-submitted.
        """

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        """The status of the given runs that ended, in as few requests as possible.

        Raises:
            BackendUnavailable: the backend did not answer (the scheduler polls again).
        """

    def cancel(self, run_id: str) -> None:
        """Ask for a run to be cancelled (best effort, returns without waiting)."""

    def close(self) -> None:
        """Release resources (threads, connections)."""


@runtime_checkable
class EndsNotified(Protocol):
    """A :class:`Backend` that tells when a run ends (the local Spark): the scheduler polls
    that run at once; its planned polls become a safety net.
    """

    def on_end(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with a run's id, from any thread, once a poll would report it ended."""
