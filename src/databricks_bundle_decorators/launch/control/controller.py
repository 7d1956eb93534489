"""One controller run: open the journal, claim the keys, steer the scheduler, hand over.

The writer ``controller:<run id>:<nonce>`` opens the backfill's journal, claims its keys
as a local launcher does, and runs the launcher's scheduler over the journal-bound
ledger, steered (:mod:`..run.steering`); open attempts are taken up with their own
idempotency tokens. A claim of an earlier attempt of this run, or of an ended
controller run, is taken over; a live one of another controller run stops this one.

A detached ``--downstream`` backfill's dependants' triggers are paused at ``--detach``
(recorded in ``<journal folder>/hold.json``, never a credential), held again by every
generation, caught up (:func:`..operations.trigger_catch_up.catch_up_dependants`,
importing each dependant's module from the project's wheel) and restored by the
generation that ends the backfill; a controller killed for good leaves the hold to the
next ``dbxdec`` command that connects to a dependant.

Exit codes (:data:`~...errors.EXIT_CODES`): 0 the backfill ended, was cancelled, handed
over, is another run's, or this run lost it earlier (:func:`mark_lost`); 7 the journal or
the claim was taken over while it ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from ...backfill.wire.controller import (
    BACKFILL_ID_PARAM,
    CONTROLLER_JOB,
    GENERATION_PARAM,
    JOB_ID_PARAM,
    handover_token,
)
from ...bundle.triggers import declared_trigger
from ...definitions import JobDefinition, Registry
from ...errors import DbxdecError, UsageError
from ..backends.backends import Backend
from ..backends.databricks_backend import DatabricksBackend, find_job
from ..backends.job_router import PerJobBackend
from ..guard.downstream_workspace import JobClaims
from ..guard.pause.pause_permission import require_pausable
from ..guard.pause.trigger_pause import (
    dependant_triggers,
    hold_triggers_detached,
    release_triggers_detached,
)
from ..ledger.claims import BackfillGuard, ClaimRecord
from ..ledger.journal import FORMAT, control_ops, current_control, journal_place, open_journal
from ..ledger.lease import CLAIM_TTL, RENEW_EVERY, WorkspaceClaims
from ..ledger.ledger import Ledger
from ..operations.downstream_triggers import WAREHOUSE_ENV, written_by
from ..operations.trigger_catch_up import catch_up_dependants
from ..plan.states import ControlState
from ..run.blocking import ReadySet, is_downstream, ledger_jobs
from ..run.events import LaunchEvent
from ..run.interrupts import Interrupts
from ..run.scheduler import Scheduler
from ..run.steering import Steering
from ..steer.steering import record_generation
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


CLAIM_LOST_EXIT = 7
HOLD_FILE = "hold.json"
_ENDED = ("TERMINATED", "SKIPPED", "INTERNAL_ERROR")
_GENERATIONS_TRIED = 5


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
    passed_on: Mapping[str, str] = field(default_factory=dict)  # to the next generation too


class ControllerClaims(WorkspaceClaims):
    """The claim of a controller run: one of an earlier attempt of this run, or of an
    ended controller run, is taken over."""

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
        ended: TERMINATED, SKIPPED and INTERNAL_ERROR are documented "This state is
        terminal" (databricks-sdk ``jobs.RunLifeCycleState``). One that cannot be read
        counts as alive."""
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
    """Drive backfill ``request.backfill_id`` until it ends, hands over or is lost; the
    exit code (see the module docstring).

    Raises:
        DbxdecError: the journal cannot be read (one line), credentials refused.
    """
    writer = f"controller:{request.run_id}:{secrets.token_hex(3)}"
    say = _printer(out or sys.stdout)  # looked up now: a caller may have replaced it
    ledger = open_journal(client, request.job_id, request.backfill_id, writer=writer)
    with workspace_errors(client.config.host):
        lost_earlier = lost_before(client, request.job_id, ledger.id, request.run_id)
    if lost_earlier is not None:  # a retry of the run that lost the claim
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

    # the longest gap between polls: at most 20 polls
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
            end_hold(  # the backfill is over: catch up, then restore (end_hold)
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
    """The backend of the backfill's runs and the claim on its keys, one job's or each
    job's (a :class:`UsageError` when the journal lacks a job's deployed id)."""
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
    """The dependants' triggers a ``--downstream`` backfill holds; ``None`` when none, or
    when the hold cannot be read (said)."""
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
    """Restore the triggers a backfill that has nothing to run still holds (no catch-up)."""
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


def mark_lost(
    client: WorkspaceClient, job_id: int, backfill_id: str, run_id: str, message: str
) -> bool:
    """Record that run ``run_id`` lost the backfill in ``lost-<run id>.json`` of its
    journal folder (a retry of the run that lost must launch nothing: the launcher that
    took the claim may have run keys the journal does not know of); whether it is
    recorded (best effort)."""
    body = {"format": FORMAT, "run_id": run_id, "message": message}
    try:
        journal_place(client, job_id, backfill_id).create(_name(run_id), json.dumps(body))
    except (OSError, DbxdecError):  # unanswered or refused (DatabricksError is an OSError)
        return False
    return True


def lost_before(client: WorkspaceClient, job_id: int, backfill_id: str, run_id: str) -> str | None:
    """Why run ``run_id`` lost the backfill in an earlier attempt; ``None`` if it did not
    (``OSError``: no answer, or refused)."""
    content = journal_place(client, job_id, backfill_id).read(_name(run_id))
    if content is None:
        return None
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        return str(json.loads(content).get("message") or "the claim was taken over")
    return "the claim was taken over"


def _name(run_id: str) -> str:
    return f"lost-{run_id}.json"


@dataclass(frozen=True, slots=True)
class ControllerRun:
    """A started controller run: which run, of which generation."""

    run_id: int
    generation: int


def controller_job_id(
    client: WorkspaceClient, *, name_prefix: str | None = None, dev_mode: bool = False
) -> int:
    """The deployed ``dbxdec_controller`` job's id (:class:`UsageError`: not deployed)."""
    try:
        return find_job(client, CONTROLLER_JOB, name_prefix=name_prefix, dev_mode=dev_mode).job_id
    except UsageError:
        raise UsageError(
            f"no deployed job {CONTROLLER_JOB!r}, which --detach runs: generate and deploy "
            "the bundle again (dbxdec deploy -t TARGET), or run without --detach"
        ) from None


def start_controller(
    client: WorkspaceClient,
    controller_job: int,
    *,
    backfill_id: str,
    job_id: int,
    generation: int,
    parameters: dict[str, str] | None = None,
) -> ControllerRun:
    """``run-now`` generation ``generation`` of the backfill's controller, with more job
    ``parameters``. The token of the backfill and generation makes a re-sent reply or two
    runs handing over at once start one run (databricks-sdk ``JobsAPI.run_now``,
    ``idempotency_token``); one naming a run that already ended means that generation
    lost its start: the next number is tried."""
    with workspace_errors(client.config.host):
        for number in range(generation, generation + _GENERATIONS_TRIED):
            job_parameters = {
                **(parameters or {}),
                BACKFILL_ID_PARAM: backfill_id,
                JOB_ID_PARAM: str(job_id),
                GENERATION_PARAM: str(number),
            }
            run_id = client.jobs.run_now(
                controller_job,
                job_parameters=job_parameters,
                idempotency_token=handover_token(backfill_id, number),
            ).run_id
            state = client.jobs.get_run(run_id).state
            life_cycle = state.life_cycle_state.value if state and state.life_cycle_state else ""
            if life_cycle not in _ENDED:
                record_generation(client, job_id, backfill_id, number)
                return ControllerRun(int(run_id), number)
    raise UsageError(
        f"could not start a controller run of backfill {backfill_id}: generations "
        f"{generation}..{number} have all ended; start one with: dbxdec backfill --resume "
        f"{backfill_id} --detach"
    )


@dataclass(frozen=True, slots=True)
class TriggerHold:
    """What a detached backfill holds paused (each dependant's deployed job id), and what
    its catch-up needs: each dependant's module, the SQL warehouse (``None``: no
    catch-up) and each declared ``trigger`` (``jobs/get`` lacks a table update's
    ``condition``, databricks/cli#6315)."""

    dependants: Mapping[str, int]
    modules: Mapping[str, str]
    warehouse_id: str | None
    triggers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_text(self) -> str:
        body = {
            "format": FORMAT,
            "dependants": dict(self.dependants),
            "modules": dict(self.modules),
            "warehouse_id": self.warehouse_id,
            "triggers": {job: dict(t) for job, t in self.triggers.items()},
        }
        return json.dumps(body, sort_keys=True)

    @classmethod
    def from_text(cls, content: str) -> TriggerHold:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a damaged file."""
        data = json.loads(content)
        warehouse = data.get("warehouse_id")
        return cls(
            {str(k): int(v) for k, v in data["dependants"].items()},
            {str(k): str(v) for k, v in data["modules"].items()},
            None if warehouse is None else str(warehouse),
            {str(k): dict(v) for k, v in data["triggers"].items()},
        )


def plan_hold(registry: Registry, jobs: Sequence[str], job_ids: Mapping[str, int]) -> TriggerHold:
    """The dependants whose trigger watches a table the backfill's ``jobs`` write."""
    graph, definitions, written = written_by(registry, jobs)
    found = dependant_triggers(graph, definitions, written)
    return TriggerHold(
        {d.job: job_ids[d.job] for d in found},
        {d.job: definitions[d.job].fn.__module__ for d in found},
        os.environ.get(WAREHOUSE_ENV) or None,
        {d.job: t for d in found if (t := declared_trigger(definitions[d.job])) is not None},
    )


def start_hold(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    job_id: int,
    backfill_id: str,
    controller_job_id: int,
) -> list[str]:
    """``--detach``: pause the dependants' triggers and record the hold.

    Raises:
        UsageError, WorkspaceRejected, WorkspaceUnreachable: a pause was refused (those
            made are put back) or the hold could not be recorded.
    """
    earlier = read_hold(client, job_id, backfill_id)  # a resumed backfill's, if any
    if earlier is not None:  # what it held is released at the end too, even if the
        # project no longer makes it a dependant
        hold = TriggerHold(
            {**earlier.dependants, **hold.dependants},
            {**earlier.modules, **hold.modules},
            hold.warehouse_id or earlier.warehouse_id,
            {**earlier.triggers, **hold.triggers},
        )
    if not hold.dependants:
        return []
    lines = hold_triggers_detached(
        client,
        backfill_id=backfill_id,
        controller_job_id=controller_job_id,
        jobs=hold.dependants,
        declared=hold.triggers,
    )
    try:  # replaces a resumed backfill's: only --detach writes it, and never while a
        # controller run of the backfill is active (a resume refuses while one is)
        journal_place(client, job_id, backfill_id).write(HOLD_FILE, hold.to_text())
    except BaseException:
        release_triggers_detached(client, backfill_id=backfill_id, jobs=hold.dependants)
        raise
    return lines


def read_hold(client: WorkspaceClient, job_id: int, backfill_id: str) -> TriggerHold | None:
    """The hold of a detached backfill (``None``: none, or a damaged file); ``OSError``
    when the workspace did not answer or refused."""
    content = journal_place(client, job_id, backfill_id).read(HOLD_FILE)
    if content is None:
        return None
    try:
        return TriggerHold.from_text(content)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def renew_hold(
    client: WorkspaceClient, hold: TriggerHold, *, backfill_id: str, controller_job_id: int
) -> list[str]:
    """A controller generation's start: hold the triggers again, once this run's principal
    is known to hold CAN MANAGE on each dependant; a refusal is one line, and the
    backfill goes on."""
    try:
        require_pausable(
            client,
            hold.dependants,
            option="--downstream",
            what="trigger",
            whose="this controller run's principal",
            then="this run holds none of the triggers (the backfill goes on)",
        )
        return hold_triggers_detached(
            client,
            backfill_id=backfill_id,
            controller_job_id=controller_job_id,
            jobs=hold.dependants,
            declared=hold.triggers,
        )
    except DbxdecError as exc:
        return [f"the dependants' triggers could not be held paused: {exc.render()}"]


def end_hold(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    backfill_id: str,
    finished: bool,
    say: Callable[[str], None],
    poll_interval: float = 1.0,
) -> None:
    """The backfill ended: catch up (when it ran to its end) and restore. Never raises:
    the triggers are restored anyway."""
    names = list(hold.dependants)
    try:
        if finished and names:
            _catch_up(client, hold, backfill_id=backfill_id, say=say, poll_interval=poll_interval)
    finally:
        for line in release_triggers_detached(
            client, backfill_id=backfill_id, jobs=hold.dependants
        ):
            say(line)


def _catch_up(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    backfill_id: str,
    say: Callable[[str], None],
    poll_interval: float,
) -> None:
    names = list(hold.dependants)
    if hold.warehouse_id is None:
        say(
            f"the catch-up of {', '.join(names)} was not launched: no SQL warehouse was set "
            f"at --detach ({WAREHOUSE_ENV}); the triggers are restored, and each one's next "
            "triggered run processes the commits made while it was paused"
        )
        return
    definitions: dict[str, JobDefinition] = {}
    for name in names:
        try:
            definitions[name] = _definition(hold.modules[name], name)
        except DbxdecError as exc:
            say(f"job {name!r}: no catch-up ({exc.render()}); its next triggered run does it")
    try:
        for done in catch_up_dependants(
            client,
            hold.warehouse_id,
            list(definitions),
            definitions=definitions,
            job_id_of=lambda job: hold.dependants[job],
            backfill_id=backfill_id,
            poll_interval=poll_interval,
        ):
            say(done.line)
    except DbxdecError as exc:
        say(f"the catch-up stopped ({exc.render()}); the triggers are restored")
    except Exception as exc:  # nothing may stop the restore that follows
        reason = str(exc).splitlines()[0] if str(exc) else ""
        say(f"the catch-up stopped ({type(exc).__name__}: {reason}); the triggers are restored")


def _definition(module: str, name: str) -> JobDefinition:
    """Job ``name`` of ``module`` (as ``dbxdec-run`` finds a job; :class:`UsageError`
    when it cannot be imported or does not define it)."""
    from ...definitions.loader import import_module
    from ...runtime.entrypoint import find_job

    found = import_module(module, not_found=f"module {module} not found in the controller's wheel")
    return find_job(found, name)
