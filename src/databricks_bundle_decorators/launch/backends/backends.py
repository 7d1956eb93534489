"""What the scheduler needs from a place that runs jobs: submit, poll in batches, cancel.

The scheduler never knows whether runs happen on Databricks or on the local Spark; it
drives a :class:`Backend` and records what it answers in the ledger.
"""

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
    """One run to start.

    Attributes:
        token: Idempotency token: submitting the same token twice returns the first run.
        parameters: The run's job parameters.
        label: The slice, for messages (``2024-01-01`` or ``2024-01-01..2024-01-07``).
        first_sent: When the token was first sent (seconds since the epoch, this
            machine's clock), if before this request: a resumed attempt whose token may
            find a run an earlier process started.
        job: The job to run (``--downstream``: a slice's job); ``None``: the backend's.
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
    """A run's state as last seen; ``message`` explains a failure.

    ``started_at``/``ended_at``: the run's own start and end (seconds since the epoch,
    as the backend records them), not when the launcher noticed; None when unknown.
    ``checks``: the results of the checks the run judged (see
    :mod:`..backfill.check_report`), when the backend has them.
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
        """``attempt`` with what the run itself recorded: its start and end, and the
        results of the checks it judged."""
        checks = tuple(result.to_json() for result in self.checks) or attempt.checks
        return replace(attempt, started_at=self.started_at, ended_at=self.ended_at, checks=checks)


class Backend(Protocol):
    """A place to run one job's runs."""

    @property
    def kind(self) -> str:
        """``databricks`` or ``local``."""

    def submit(self, request: SubmitRequest) -> Submitted:
        """Start a run (or return the run already started with ``request.token``).

        May block while the backend retries; thread-safe.

        Raises:
            SubmitRejected: the request was refused and no run exists.
            BackendUnavailable: the backend did not answer; the scheduler re-submits
                the same token once it answers again, without counting a try.
            Exception: anything else leaves it unknown whether a run exists; the
                scheduler re-submits the same token later.
        """

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        """The status of the given runs, in as few requests as possible.

        Runs missing from the answer are still in flight as far as the backend knows.

        Raises:
            BackendUnavailable: the backend did not answer (the scheduler polls again).
        """

    def cancel(self, run_id: str) -> None:
        """Ask for a run to be cancelled (best effort, returns without waiting)."""

    def close(self) -> None:
        """Release resources (threads, connections)."""


@runtime_checkable
class EndsNotified(Protocol):
    """An optional capability of a :class:`Backend`: it tells when a run ends.

    A backend whose runs end inside this process (the local Spark) knows the instant a
    run ends; the scheduler then polls that run at once instead of waiting for the
    next poll the policy of :mod:`.poll_policy` would plan (its polls become a safety
    net). A backend without it (Databricks) is only polled.
    """

    def on_end(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with a run's id, from any thread, once :meth:`Backend.poll`
        reports the run ended (or cancelled)."""
