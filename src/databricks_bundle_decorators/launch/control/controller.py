"""One controller run: open the journal, claim the keys, steer the scheduler, hand over.

The run's writer name is ``controller:<run id>:<nonce>`` (the nonce tells two attempts
of one run apart). It opens the backfill's journal, which is where the backfill's
ledger lives (segments, snapshots: :mod:`..ledger.journal`), and takes the claim on its
keys as a local launcher does (:mod:`..ledger.lease`), then runs the launcher's
scheduler over the journal-bound ledger, steered (:mod:`..run.steering`). Slices already
succeeded are skipped; open attempts are taken up with their own idempotency tokens, so
a run started by an earlier controller run is found again, never started twice.

The claim file of the backfill may be an earlier attempt's of this same job run (the
platform retries a task only after its attempt ended: it is dead) or a generation's
that handed over (it released it first): those are taken over. A live claim of another
controller run means that run drives the backfill: this one stops at once, exit 0.

Outcome (exit codes as ``dbxdec``'s, :data:`~...errors.EXIT_CODES`): 0 the backfill
ended (succeeded, failed: see the journal), was cancelled, handed over, or is another
run's, or this run lost the claim in an earlier attempt (:mod:`.lost`: its retries launch
nothing); 7 the journal or the claim was taken over while it ran (it launched no more runs
and left those in flight to whoever holds the backfill now).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TextIO

from ...errors import DbxdecError, UsageError
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend
from ..backends.job_router import PerJobBackend
from ..guard.job_claims import JobClaims
from ..ledger.claims import BackfillGuard, ClaimRecord
from ..ledger.journal import control_ops, current_control, open_journal
from ..ledger.lease import CLAIM_TTL, RENEW_EVERY, WorkspaceClaims
from ..ledger.ledger import Ledger
from ..plan.states import ControlState
from ..run.blocking import ReadySet, is_downstream, ledger_jobs
from ..run.events import LaunchEvent
from ..run.interrupts import Interrupts
from ..run.scheduler import Scheduler
from ..run.steering import Steering
from ..workspace.workspace import workspace_errors
from .handover import start_controller
from .lost import lost_before, mark_lost
from .trigger_hold import TriggerHold, end_hold, read_hold, renew_hold

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CLAIM_LOST_EXIT = 7


@dataclass(frozen=True, slots=True)
class ControllerRequest:
    """What one controller run is asked (its parameters)."""

    backfill_id: str
    job_id: int
    generation: int
    run_id: str
    controller_job_id: int | None
    handover_after: float
    claim_ttl: float = CLAIM_TTL
    poll_interval: float = 1.0
    control_every: float = 5.0
    passed_on: Mapping[str, str] = field(default_factory=dict)
    """Parameters the next generation gets too (tests: the short times)."""


class ControllerClaims(WorkspaceClaims):
    """The claim of a controller run: the backfill's own claim file of an earlier
    attempt of this job run is taken over (see the module docstring)."""

    def acquire(self, ledger: Ledger) -> ClaimRecord:
        from databricks.sdk.errors import ResourceAlreadyExists

        with contextlib.suppress(ResourceAlreadyExists, OSError):
            existing = self._read(ledger.id)
            if existing is not None and (
                existing.host == self.host or self._ended_controller(existing.host)
            ):
                self.place.delete(f"{ledger.id}.json")  # an earlier attempt of this run, or a run
                # that ended without releasing it (cancelled by a person): dead
        return super().acquire(ledger)

    def _ended_controller(self, host: str) -> bool:
        """Whether ``host`` names a controller run (``controller run <id>``) that has
        ended: TERMINATED, SKIPPED and INTERNAL_ERROR are the states documented "This
        state is terminal" (Databricks SDK ``jobs.RunLifeCycleState``,
        https://databricks.github.io/sdk-js/api/types/_databricks_sdk-jobs.v2.RunLifeCycleState_RunLifeCycleState.html;
        the same enum in databricks-sdk-py). A run that cannot be read counts as alive:
        the claim then expires as any does."""
        prefix = "controller run "
        run_id = host[len(prefix) :] if host.startswith(prefix) else ""
        if not run_id.isdigit():
            return False
        try:
            state = self.client.jobs.get_run(int(run_id)).state
        except Exception:  # unreachable or refused: not known to be dead
            return False
        ended = {"TERMINATED", "SKIPPED", "INTERNAL_ERROR"}
        cycle = state.life_cycle_state if state is not None else None
        return cycle is not None and cycle.value in ended


def run_controller(
    client: WorkspaceClient,
    request: ControllerRequest,
    *,
    out: TextIO | None = None,
) -> int:
    """Drive backfill ``request.backfill_id`` until it ends, hands over or is lost.

    Returns:
        The exit code (see the module docstring).

    Raises:
        DbxdecError: the journal cannot be read (one line), credentials refused.
    """
    writer = f"controller:{request.run_id}:{secrets.token_hex(3)}"
    say = _printer(out or sys.stdout)  # looked up now: a caller may have replaced it
    ledger = open_journal(client, request.job_id, request.backfill_id, writer=writer)
    with workspace_errors(client.config.host):
        lost_earlier = lost_before(client, request.job_id, ledger.id, request.run_id)
    if lost_earlier is not None:  # a retry of the run that lost the claim: see .lost
        say(
            f"controller run {request.run_id} lost backfill {ledger.id} earlier and does not "
            f"take it back ({lost_earlier}); resume it with: "
            f"dbxdec backfill --resume {ledger.id} --detach"
        )
        return 0
    if all(r.state == "succeeded" for r in ledger.slices):
        say(f"backfill {ledger.id} has nothing left to run ({ledger.state})")
        _release_held(client, request, ledger, say)  # a run killed before it did
        return 0

    def control() -> ControlState:
        ops = control_ops(client, request.job_id, request.backfill_id, details=False)
        return current_control(ops)  # one request a read

    open_runs = any(r.last is not None and r.last.is_open for r in ledger.slices)
    if control() == "cancelled" and not open_runs:  # with runs open: cancel them first
        say(f"backfill {ledger.id} is cancelled: nothing to do (resume it to go on)")
        _release_held(client, request, ledger, say)
        return 0
    backend, claims = _backend_and_claims(client, request, ledger)
    interrupts = Interrupts()
    lost: list[str] = []

    def claim_lost(message: str) -> None:
        lost.append(message)
        interrupts.stop(message)

    # the longest gap between polls: 15 s at the default 1 s (as the launcher's), less when
    # --poll_interval is shorter (tests), so a run that ended is seen within 20 polls
    poll = request.poll_interval
    slowest = max(poll, min(ledger.options.max_poll_interval, 20 * poll))
    options = replace(ledger.options, poll_interval=poll, max_poll_interval=slowest)
    steering = Steering(
        control,
        control_every=request.control_every,
        handover_at=time.monotonic() + request.handover_after,
    )
    scheduler = Scheduler(
        backend,
        ledger,
        options,
        emit=lambda event: say(_line(event)),
        interrupts=interrupts,
        ready=ReadySet(ledger) if is_downstream(ledger) else None,
        steering=steering,
    )
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(backend.close)
        try:
            cleanup.enter_context(claims.hold(ledger, claim_lost))
        except UsageError as exc:
            say(f"another controller run drives backfill {ledger.id}; this one stops: {exc}")
            return 0
        say(f"controller {writer} drives backfill {ledger.id} ({ledger.job}, job {request.job_id})")
        hold = _held_triggers(client, request, ledger, say)
        state = scheduler.run()
        ended = not steering.handing_over or state != "running"
        if hold is not None and ended and steering.journal_lost is None and not lost:
            end_hold(  # the backfill is over: catch up, then restore (.trigger_hold)
                client,
                hold,
                backfill_id=ledger.id,
                finished=state != "interrupted",
                say=say,
                poll_interval=request.poll_interval,
            )
    if steering.journal_lost is not None or lost:
        if lost and steering.journal_lost is None:  # its retries must not take it back
            mark_lost(client, request.job_id, ledger.id, request.run_id, lost[0])
        say(str(steering.journal_lost or lost[0]))
        return CLAIM_LOST_EXIT
    if steering.handing_over and state == "running":
        assert request.controller_job_id is not None, "a handover needs controller_job_id"
        started = start_controller(
            client,
            request.controller_job_id,
            backfill_id=ledger.id,
            job_id=request.job_id,
            generation=request.generation + 1,
            parameters=dict(request.passed_on),
        )
        say(f"handed over to controller run {started.run_id} (generation {started.generation})")
        return 0
    counts = ", ".join(f"{n} {s}" for s, n in ledger.counts().items() if n)
    say(f"backfill {ledger.id} {state}: {counts}")
    return 0


def _backend_and_claims(
    client: WorkspaceClient, request: ControllerRequest, ledger: Ledger
) -> tuple[Backend, BackfillGuard]:
    """The backend of the backfill's runs and the claim on its keys: one job's, or, for a
    ``--downstream`` backfill, each job's (its deployed ids are in the journal).

    Raises:
        UsageError: a ``--downstream`` journal without every job's deployed id.
    """
    checks = ledger.options.checks

    def claim(job: str, job_id: int) -> ControllerClaims:
        return ControllerClaims(
            client,
            job=job,
            job_id=job_id,
            ttl=request.claim_ttl,
            renew_every=min(RENEW_EVERY, request.claim_ttl / 5),
            host=f"controller run {request.run_id}",
        )

    if not is_downstream(ledger):
        one = DatabricksBackend(client, request.job_id, read_checks=checks)
        return one, claim(ledger.job, request.job_id)
    job_ids = dict(ledger.backend.job_ids)
    jobs = ledger_jobs(ledger)
    missing = [job for job in jobs if job not in job_ids]
    if missing:
        raise UsageError(
            f"backfill {ledger.id} runs {', '.join(missing)} but its journal does not say "
            f"where they are deployed: resume it from this project, without --detach: "
            f"dbxdec backfill --resume {ledger.id}"
        )
    backends: dict[str, Backend] = {
        job: DatabricksBackend(client, job_ids[job], read_checks=checks) for job in jobs
    }
    claims = JobClaims({job: claim(job, job_ids[job]) for job in jobs})
    return PerJobBackend(backends, ledger), claims


def _hold_of(
    client: WorkspaceClient,
    request: ControllerRequest,
    ledger: Ledger,
    say: Callable[[str], None],
) -> TriggerHold | None:
    """The dependants' triggers a ``--downstream`` backfill holds (:mod:`.trigger_hold`);
    ``None`` for one job's backfill (nothing is read), when it holds none, or when the
    hold cannot be read (said; the next command that connects to a dependant restores
    it)."""
    if not is_downstream(ledger):
        return None
    try:
        with workspace_errors(client.config.host):
            hold = read_hold(client, request.job_id, ledger.id)
    except DbxdecError as exc:
        say(f"could not read which triggers the backfill holds paused: {exc.render()}")
        return None
    return hold if hold is not None and hold.dependants else None


def _held_triggers(
    client: WorkspaceClient,
    request: ControllerRequest,
    ledger: Ledger,
    say: Callable[[str], None],
) -> TriggerHold | None:
    """The dependants' triggers this backfill holds, held again by this run."""
    hold = _hold_of(client, request, ledger, say)
    if hold is not None and request.controller_job_id is not None:
        for line in renew_hold(
            client, hold, backfill_id=ledger.id, controller_job_id=request.controller_job_id
        ):
            say(line)
    return hold


def _release_held(
    client: WorkspaceClient,
    request: ControllerRequest,
    ledger: Ledger,
    say: Callable[[str], None],
) -> None:
    """Restore the triggers a backfill that has nothing to run still holds (no catch-up:
    the run that ended it was killed before; each trigger's next run processes them)."""
    hold = _hold_of(client, request, ledger, say)
    if hold is not None:
        end_hold(client, hold, backfill_id=ledger.id, finished=False, say=say)


def _printer(out: TextIO) -> Callable[[str], None]:
    def say(line: str) -> None:
        print(line, file=out, flush=True)

    return say


def _line(event: LaunchEvent) -> str:
    parts = [event.kind, event.label]
    if event.run_id:
        parts.append(f"run {event.run_id}")
    if event.message:
        parts.append(event.message)
    return " ".join(p for p in parts if p)
