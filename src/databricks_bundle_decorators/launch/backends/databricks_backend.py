"""The Databricks backend: ``jobs/run-now`` with an idempotency token and every read resent
when slow (:class:`Overtaker`); status polled in batches from the job's active runs and the
runs that left them (:mod:`.run_window`); a call left unanswered raises
:class:`~.errors.BackendUnavailable`.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ...backfill.base import BackfillDef
from ...backfill.wire import KeyChange, TaskOrder, order_in
from ...errors import UsageError
from ...runtime.triggers.run_history import RUNS_LIST_PAGE, run_parameters
from ..plan.history import RunObservation, keys_of_parameters
from ..plan.states import KeyState, RunState
from ..workspace.target import needs_short_name, short_user_name, with_short_name
from ..workspace.workspace import backfill_client, classify, connect, workspace_errors
from .backends import RunStatus, SubmitRequest, Submitted
from .errors import BackendUnavailable, SubmitRejected
from .run_window import RunListing
from .task_output import read_check_results

__all__ = [
    "DatabricksBackend",
    "Overtaker",
    "RemoteJob",
    "connect",
    "find_job",
    "run_history",
    "run_status",
]

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun, Run

RUNS_PAGE = RUNS_LIST_PAGE  # the Jobs API's largest runs/list page
_QUEUED = {"QUEUED", "PENDING", "BLOCKED", "WAITING_FOR_RETRY"}
_RUNNING = {"RUNNING", "TERMINATING"}


@dataclass(frozen=True, slots=True)
class RemoteJob:
    """A deployed job; ``schedule_paused``: ``None`` when nothing starts it on its own, else
    whether every schedule, trigger and continuous setting it has is paused;
    ``created_ms``: its ``created_time``.
    """

    job_id: int
    name: str
    max_concurrent_runs: int
    queue_enabled: bool
    schedule_paused: bool | None = None
    created_ms: int | None = None


def find_job(
    client: WorkspaceClient,
    name: str,
    *,
    job_id: int | None = None,
    name_prefix: str | None = None,
    dev_mode: bool = False,
) -> RemoteJob:
    """The deployed job for dbxdec job ``name``: ``job_id``, else by name after
    ``name_prefix`` (a target's ``presets.name_prefix``) or, in development mode, the
    ``[dev <user>] `` prefix.

    Raises:
        UsageError: no such job, or several jobs of that name.
        WorkspaceRejected: the credentials or a permission were refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    from databricks.sdk.errors import (
        BadRequest,
        InvalidParameterValue,
        NotFound,
        ResourceDoesNotExist,
    )

    with workspace_errors(client.config.host):
        if job_id is not None:
            try:
                return _remote(client.jobs.get(job_id))
            except (NotFound, ResourceDoesNotExist, InvalidParameterValue, BadRequest):
                raise UsageError(f"--job-id {job_id}: no such job in the workspace") from None
        if name_prefix and needs_short_name(name_prefix):
            wanted = [f"{with_short_name(name_prefix, s)}{name}" for s in _short_names(client)]
        elif name_prefix:
            wanted = [f"{name_prefix}{name}"]
        elif dev_mode:
            wanted = [f"[dev {short}] {name}" for short in _short_names(client)]
        else:
            wanted = [name]
        for candidate in wanted:
            found = [_remote(j) for j in client.jobs.list(name=candidate)]
            if len(found) > 1:
                ids = ", ".join(str(j.job_id) for j in found)
                raise UsageError(f"several jobs are named {candidate!r} ({ids}): pass --job-id ID")
            if found:
                return found[0]
        hint = "" if dev_mode else "; for a development deployment pass -t TARGET"
        raise UsageError(
            f"no deployed job named {wanted[0]!r}: deploy it (dbxdec deploy -t TARGET){hint}, "
            "or pass --job-id ID"
        )


def _short_names(client: WorkspaceClient) -> list[str]:
    """The user's short name as the Databricks CLI puts it in ``[dev <name>]``."""
    me = client.current_user.me()
    return [short_user_name(me.user_name or "", me.display_name)]


def _remote(job: Any) -> RemoteJob:
    settings = job.settings
    queue = getattr(settings, "queue", None)
    return RemoteJob(
        job_id=int(job.job_id),
        name=str(getattr(settings, "name", "") or ""),
        max_concurrent_runs=int(getattr(settings, "max_concurrent_runs", None) or 1),
        queue_enabled=bool(queue is not None and queue.enabled),
        schedule_paused=_schedule_paused(settings),
        created_ms=getattr(job, "created_time", None),
    )


def _schedule_paused(settings: Any) -> bool | None:
    statuses = [
        getattr(getattr(block, "pause_status", None), "value", None) or "UNPAUSED"
        for block in (getattr(settings, f, None) for f in ("schedule", "trigger", "continuous"))
        if block is not None
    ]
    return all(s == "PAUSED" for s in statuses) if statuses else None


def run_status(run: BaseRun | Run) -> RunStatus:
    """A Jobs API run as a :class:`RunStatus`."""
    state = run.state
    lcs = state.life_cycle_state.value if state and state.life_cycle_state else "PENDING"
    message = (state.state_message if state else None) or ""
    url = run.run_page_url
    if lcs in _QUEUED:
        return RunStatus(RunState.QUEUED, url=url)
    started, ended = _seconds(run.start_time), _seconds(run.end_time)
    if lcs in _RUNNING:
        return RunStatus(RunState.RUNNING, url=url, started_at=started)
    result = state.result_state.value if state and state.result_state else ""
    if result == "SUCCESS":
        return RunStatus(RunState.SUCCEEDED, "", url, started, ended)
    if result == "CANCELED":  # the workspace's words in dbxdec's spelling: one per output
        message = _CANCELED.sub(lambda m: m[0][0] + "ancelled", message) or "run cancelled"
        return RunStatus(RunState.CANCELLED, message, url, started, ended)
    if result == "SUCCESS_WITH_FAILURES":
        message = message or "some tasks failed"
    detail = f"{lcs} {result}".strip() if not message else f"{result or lcs}: {message}"
    return RunStatus(RunState.FAILED, detail, url, started, ended)


_CANCELED = re.compile(r"\b[Cc]anceled\b")


def _seconds(milliseconds: int | None) -> float | None:
    """A Jobs API time (epoch milliseconds; 0 = not yet) in seconds."""
    return milliseconds / 1000 if milliseconds else None


class DatabricksBackend:
    """Runs of one deployed job, through a ``WorkspaceClient`` whose calls are bounded
    (:func:`~..workspace.workspace.backfill_client`).

    Args:
        straggler_interval: Seconds between lookups of a run that ``runs/get`` found
            still active although no active page listed it.
        read_checks: Read each ended run's check results from its tasks' output.
        resend_after: Resend an unanswered ``run-now`` or read after this many seconds
            (``0``: never; ``None``: a few times the usual latency).
        measure: Measures a canary run's keys for ``--diff-gate``.
    """

    kind = "databricks"

    def __init__(
        self,
        client: WorkspaceClient,
        job_id: int,
        *,
        straggler_interval: float = 5.0,
        read_checks: bool = False,
        resend_after: float | None = None,
        measure: Callable[[str, Collection[str], str], list[KeyChange]] | None = None,
    ) -> None:
        self.client = backfill_client(client)
        self.measure = measure
        self.read_checks = read_checks
        self.job_id = job_id
        self.straggler_interval = straggler_interval
        self._overtaker = Overtaker(after=resend_after)  # a run-now held by a 429/503
        self._reads = Overtaker(after=resend_after)  # reads: idempotent GETs
        self._listing = RunListing(self.client, job_id, self._reads)

    def submit(self, request: SubmitRequest) -> Submitted:
        with _unanswered_as_unavailable():
            return self._submit(request)

    def _submit(self, request: SubmitRequest) -> Submitted:
        from databricks.sdk.errors import (
            BadRequest,
            InvalidParameterValue,
            NotFound,
            PermissionDenied,
            ResourceDoesNotExist,
            Unauthenticated,
        )

        sent = time.time()  # the run starts after this, on the workspace's clock
        if request.first_sent is not None:  # the token may find an earlier process's run
            sent = min(sent, request.first_sent)
        try:
            # a run of some tasks (--tasks) runs only them: run-now's ``only``
            order = order_in(request.parameters)
            only = list(order.tasks) if isinstance(order, TaskOrder) else []
            waiter = self._overtaker(
                lambda: self.client.jobs.run_now(
                    self.job_id,
                    job_parameters=dict(request.parameters),
                    idempotency_token=request.token,
                    only=only or None,
                )
            )
        except (ResourceDoesNotExist, PermissionDenied, Unauthenticated) as exc:
            raise SubmitRejected(one_line(exc), fatal=True) from None
        except (BadRequest, InvalidParameterValue, NotFound) as exc:
            message = one_line(exc)
            # run-now answers a deleted job with 400 INVALID_PARAMETER_VALUE, not 404
            gone = message.startswith(f"Job {self.job_id} does not exist")
            raise SubmitRejected(message, fatal=gone) from None
        return Submitted(str(waiter.run_id))

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        with _unanswered_as_unavailable():
            found = self._poll(run_ids)
            if not self.read_checks:
                return found
            return {run: self._with_checks(run, status) for run, status in found.items()}

    def _with_checks(self, run_id: str, status: RunStatus) -> RunStatus:
        if status.state not in ("succeeded", "failed"):
            return status
        return replace(status, checks=read_check_results(self.client, int(run_id)))

    def _poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        wanted = {int(r) for r in run_ids}
        if not wanted:
            return {}
        listed = self._listing.read(wanted)
        found = {str(r): run_status(run) for r, run in listed.ended.items()}
        now = time.monotonic()
        missing = wanted - listed.active.keys() - listed.ended.keys()
        for run_id in self._listing.to_look_up(missing, now, self.straggler_interval):
            if not self._get(run_id, found):
                self._listing.unlisted(run_id, now)
        self._listing.forget(int(r) for r in found)
        return found

    def _get(self, run_id: int, found: dict[str, RunStatus]) -> bool:
        """Look ``run_id`` up on its own; add it to ``found`` (and say so) if it has ended."""
        run = self._reads(lambda: self.client.jobs.get_run(run_id))
        self._listing.started(run_id, run.start_time)
        status = run_status(run)
        if status.is_terminal:
            found[str(run_id)] = status
        return status.is_terminal

    def cancel(self, run_id: str) -> None:
        with _unanswered_as_unavailable():
            self.client.jobs.cancel_run(int(run_id))

    def close(self) -> None:
        self._overtaker.close()
        self._reads.close()

    def key_changes(self, run_id: str, keys: Collection[str], backfill_id: str) -> list[KeyChange]:
        """What run ``run_id`` did to ``keys``, measured by a run of the job (.measure_run)."""
        if self.measure is None:
            raise RuntimeError("this backfill was started without --diff-gate")
        return self.measure(run_id, keys, backfill_id)


def run_history(
    client: WorkspaceClient, job_id: int, backfill: BackfillDef
) -> list[RunObservation]:
    """Every run of the job as the keys it wrote (from its ``job_parameters``).

    Raises:
        WorkspaceRejected: the credentials or a permission were refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    with workspace_errors(client.config.host):
        observations: list[RunObservation] = []
        for run in client.jobs.list_runs(job_id=job_id, limit=RUNS_PAGE):
            started = (run.start_time or 0) / 1000
            keys = keys_of_parameters(backfill, run_parameters(run), started=started)
            if not keys:
                continue
            status = run_status(run)
            # result_state CANCELED, "The run was canceled at user request" (databricks-sdk
            # RunResultState docstring) is cancelled; TIMEDOUT and the rest stay failed
            observations.append(
                RunObservation(
                    keys,
                    KeyState.RUNNING if not status.is_terminal else KeyState(status.state),
                    started,
                    str(run.run_id),
                    status.message,
                )
            )
        return observations


@contextmanager
def _unanswered_as_unavailable() -> Iterator[None]:
    """Raise :class:`BackendUnavailable` for a call the workspace did not answer."""
    try:
        yield
    except Exception as exc:
        found = classify(exc)
        if found is None or found[0] in ("credentials", "permission"):
            raise
        raise BackendUnavailable(found[1]) from None


def one_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


T = TypeVar("T")

_SLOW = 3.0  # a call is sent again after this many times the usual latency
_COPIES = 3  # the SDK retries a 429/503 after up to 1 s: three copies rarely all wait
_LATENCIES = 32


class Overtaker:
    """Runs repeatable calls, each sent once more every time it is slow (``copies`` at most,
    none after a copy failed); ``floor``: the adaptive threshold's least seconds;
    ``after``: a fixed one (``0``: never).
    """

    def __init__(
        self,
        *,
        floor: float = 0.03,
        after: float | None = None,
        copies: int = _COPIES,
        workers: int = 64,
    ) -> None:
        if after is not None and after < 0:
            raise ValueError(f"after must be 0 (never) or positive, not {after}")
        self.floor = floor
        self.copies = copies
        self.fixed = after
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="dbxdec-overtake")
        self._latencies: deque[float] = deque(maxlen=_LATENCIES)
        self._lock = threading.Lock()

    def after(self) -> float | None:
        """Seconds a call may take before it is sent again (``None``: never)."""
        if self.fixed is not None:
            return self.fixed or None
        with self._lock:
            usual = statistics.median(self._latencies) if self._latencies else 0.0
        return max(self.floor, _SLOW * usual)

    def __call__(self, call: Callable[[], T]) -> T:
        """The first answer of ``call`` (sent again while slow); if every copy raised, the
        first copy's exception.
        """
        started = time.monotonic()
        after = self.after()
        first = self._pool.submit(call)
        waiting, sent, failed = [first], 1, False
        while True:
            more = after is not None and sent < self.copies and not failed
            done, pending = wait(
                waiting, timeout=after if more else None, return_when=FIRST_COMPLETED
            )
            answered = [f for f in done if f.exception() is None]
            if answered:
                with self._lock:
                    self._latencies.append(time.monotonic() - started)
                return answered[0].result()
            if not pending and done:
                return first.result()  # every copy raised: the first copy's exception
            if done:  # a copy raised (the SDK gave up): no more copies, wait for the rest
                waiting, failed = list(pending), True
                continue
            waiting.append(self._pool.submit(call))  # slow: one more copy
            sent += 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
