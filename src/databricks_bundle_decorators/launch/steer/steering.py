"""``dbxdec backfill pause|unpause|cancel ID``: steering a detached backfill.

The caller must hold ``CAN_MANAGE_RUN`` (or more) on the backfilled job
(:func:`require_steering`; the journal folder under ``/Shared`` is writable by everyone,
so it cannot be the gate). The request is appended to the journal
(``control/<m>-<op>.json``, created without overwrite; the latest wins) and read by the
controller at every tick: *paused*, it launches nothing new; *cancelled*, it cancels the
runs in flight and stops. ``unpause`` with no controller running starts one (token
``dbxdec-ctl-<id>-u<m>``: one run per request); ``cancel`` with none does the
controller's cancel itself (:func:`cancel_without_controller`). ``--resume ID`` of a
detached backfill with no local ledger resumes from its journal here
(:func:`prepare_journal_resume`), refused while a controller run of it is active.

The controller runs are runs of the ``dbxdec_controller`` job with the backfill's
``backfill_id``; *active* while ``runs/list?active_only=true`` lists one ("An active run
is a run in the QUEUED, PENDING, RUNNING, or TERMINATING", databricks-sdk
``JobsAPI.list_runs``). Each start records its generation beside the journal
(``generation.json``): "Runs are automatically removed after 60 days"
(``JobsAPI.get_run_output``), and a removed run's token cannot start one again
(``JobsAPI.run_now``), so the next generation is above both the listing and the record.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ...backfill.wire.controller import CONTROLLER_JOB, controller_token
from ...bundle.project import ProjectConfig
from ...definitions import Registry
from ...errors import DbxdecError, UsageError, counted
from ...runtime.triggers.run_history import run_parameters
from ..backends.backends import SubmitRequest
from ..backends.databricks_backend import DatabricksBackend, find_job
from ..backends.errors import SubmitRejected
from ..ledger.claims import this_host, this_user
from ..ledger.journal import (
    JournalLost,
    append_control,
    control_ops,
    current_control,
    journal_place,
    open_journal,
    read_journal,
)
from ..ledger.ledger import Attempt, Ledger, backfill_ids, ledger_dir, read_detached
from ..plan.request import ResumeRequest
from ..plan.states import BackfillState, RunState
from ..prepare.prepared import PreparedBackfill
from ..prepare.resume import prepare_resume
from ..status.journal_status import JournalPlace, job_of_backfill, locate_journal
from ..workspace.job_access import RUN_LEVELS, JobAccess, require_level
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun


GENERATION_FILE = "generation.json"
SteerAction = Literal["pause", "unpause", "cancel"]
CANCEL_WAIT = 120.0  # seconds to wait for the cancelled runs to be reported ended


@dataclass(frozen=True, slots=True)
class SteerResult:
    """What a steering command did: the request's number in the journal, who asked, the
    controller run that carries it out (``started``: by ``unpause``; ``None``: none), the
    runs a cancel with no controller cancelled itself, and the lines to show."""

    action: SteerAction
    seq: int
    by: str
    controller_run: int | None
    started: bool = False
    cancelled: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


def steer(place: JournalPlace, action: SteerAction, *, poll_interval: float = 1.0) -> SteerResult:
    """Check the caller may, record ``action`` in the journal of ``place``'s backfill,
    and make sure a controller (or this command) carries it out.

    Raises:
        WorkspaceRejected: the caller lacks CAN_MANAGE_RUN on the job (exit 4).
        UsageError: the backfill has no journal, or has ended (nothing to steer).
        WorkspaceUnreachable: the workspace did not answer.
    """
    bid = place.backfill_id
    steerer = require_steering(
        place.client, place.job_id, job=place.remote_name, action=action, backfill_id=bid
    )
    ledger = read_journal(place.client, place.job_id, bid)
    counts = ledger.counts()
    if ledger.state in ("succeeded", "failed"):
        raise UsageError(
            f"backfill {bid} has ended ({ledger.state}): nothing to {action}; launch what is "
            f"left with: dbxdec backfill --resume {bid}"
        )
    controller_id = controller_job(place, required=action == "unpause")  # before recording
    op = append_control(place.client, place.job_id, bid, action, by=steerer.user)
    recorded = f"Recorded {action} of backfill {bid} (request {op.seq}, by {steerer.user})."
    controller = active_run(place, controller_id)
    in_flight = counted(counts["running"] + counts["submitting"], "run")
    if action == "pause":
        then = "no new runs are launched; the " + in_flight + " in flight finish"
        return SteerResult(action, op.seq, steerer.user, controller, lines=(recorded, then))
    if action == "unpause":
        if controller is not None:
            line = f"Controller run {controller} goes on launching."
            return SteerResult(action, op.seq, steerer.user, controller, lines=(recorded, line))
        assert controller_id is not None  # required above
        started = start_controller(place, controller_id, suffix=f"u{op.seq}")
        line = f"Started controller run {started} (none was running)."
        return SteerResult(action, op.seq, steerer.user, started, True, lines=(recorded, line))
    if controller is not None:
        line = f"Controller run {controller} cancels the {in_flight} in flight and stops."
        return SteerResult(action, op.seq, steerer.user, controller, lines=(recorded, line))
    report = cancel_without_controller(place, by=steerer.user, poll_interval=poll_interval)
    resume = (
        f"Go on later with: dbxdec backfill unpause {bid} (a controller run), or dbxdec "
        f"backfill --resume {bid} (from this machine)"
    )
    lines = (recorded, "No controller is running: cancelling here.", *report.lines, resume)
    return SteerResult(action, op.seq, steerer.user, None, cancelled=report.cancelled, lines=lines)


def controller_job(place: JournalPlace, *, required: bool) -> int | None:
    """The deployed controller job of ``place``'s deployment; ``None`` when it is not
    deployed, unless ``required`` (then a :class:`UsageError`)."""
    try:
        return controller_job_id(place)
    except UsageError:
        if required:
            raise
        return None


def active_run(place: JournalPlace, controller_id: int | None) -> int | None:
    """The active controller run of ``place``'s backfill, if any."""
    if controller_id is None:
        return None
    runs = controller_runs(place.client, controller_id, place.backfill_id, active_only=True)
    return int(runs[0].run_id) if runs and runs[0].run_id is not None else None


def active_controller(place: JournalPlace) -> int | None:
    """The active controller run of ``place``'s backfill (none when no controller job is
    deployed)."""
    return active_run(place, controller_job(place, required=False))


def driving_line(place: JournalPlace, state: str, control: str) -> str | None:
    """One line when backfill ``place`` has not ended but no controller run of it is
    active; ``None`` otherwise."""
    if state != "running" or active_controller(place) is not None:
        return None
    bid = place.backfill_id
    why = "paused" if control == "paused" else "no controller run is active"
    return (
        f"backfill {bid} is not being driven ({why}): nothing is launched until "
        f"dbxdec backfill unpause {bid} starts a controller run"
    )


@dataclass(frozen=True, slots=True)
class Steerer:
    """Who steers, and the grant that lets them (``"CAN_MANAGE_RUN through group eng"``)."""

    user: str
    grant: str


def require_steering(
    client: WorkspaceClient, job_id: int, *, job: str, action: str, backfill_id: str
) -> Steerer:
    """The caller, if they may ``action`` (pause, unpause, cancel) a backfill of job
    ``job_id``.

    Raises:
        WorkspaceRejected: they may not (one line), or refused.
        WorkspaceUnreachable: the workspace did not answer.
    """

    def refusal(access: JobAccess) -> str:
        return (
            f"{access.principal.name or 'this caller'} may not {action} backfill "
            f"{backfill_id}: that needs CAN_MANAGE_RUN on job {job} (job id {job_id}), granted "
            "to the user or to a group they are directly in; ask an owner of the job to grant "
            "it (a writable /Shared folder is not enough)"
        )

    access = require_level(client, job_id, RUN_LEVELS, refusal=refusal)
    assert access.grant is not None
    return Steerer(access.principal.name, access.grant)


@dataclass(frozen=True, slots=True)
class CancelReport:
    """What the cancel did: runs cancelled, and lines to show."""

    cancelled: tuple[str, ...]
    lines: tuple[str, ...]


def cancel_without_controller(
    place: JournalPlace,
    *,
    by: str,
    poll_interval: float = 1.0,
    wait: float = CANCEL_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> CancelReport:
    """Cancel the runs in flight of ``place``'s backfill and record it in its journal, as
    a controller would: each ``submitting`` attempt is sent again with its own token,
    which answers the run it created ("If a run with the provided token already exists,
    the request does not create a new run but returns the ID of the existing run",
    databricks-sdk ``JobsAPI.run_now``); every run in flight is cancelled (asynchronous:
    ``JobsAPI.cancel_run``) and waited for, boundedly; the attempts and the ledger are
    recorded in one segment, fenced like a controller's.

    Raises:
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    ledger = open_journal(place.client, place.job_id, place.backfill_id, writer=f"steer:{by}")
    backend = DatabricksBackend(place.client, place.job_id)
    lines: list[str] = []
    cancelled: list[str] = []
    try:
        for record in list(ledger.slices):
            attempt = record.last
            if attempt is None or not attempt.is_open:
                continue
            run_id = attempt.run_id or _learn_run_id(backend, ledger, record.index, attempt)
            if run_id is not None:
                backend.cancel(run_id)
                cancelled.append(run_id)
            ended = replace(
                attempt,
                run_id=run_id,
                state=RunState.CANCELLED,
                ended_at=time.time(),
                error=f"cancelled by {by} (dbxdec backfill cancel)",
            )
            ledger.update(record.with_attempt(ended))
        lines += _wait_ended(backend, cancelled, poll_interval, wait, sleep)
    finally:
        backend.close()
    ledger.set_state(BackfillState.INTERRUPTED)
    try:
        ledger.save()
    except JournalLost as lost:  # a controller took the backfill meanwhile: it cancels
        lines.append(f"{lost.render()}; the controller that wrote it cancels the runs itself")
    finally:
        ledger.close()
    lines.insert(0, f"Cancelled {counted(len(cancelled), 'run')} in flight.")
    return CancelReport(tuple(cancelled), tuple(lines))


def _learn_run_id(
    backend: DatabricksBackend, ledger: Ledger, index: int, attempt: Attempt
) -> str | None:
    """The run of a ``submitting`` attempt, found by sending its token again (``None``:
    refused, no run exists)."""
    record = ledger.slices[index]
    request = SubmitRequest(
        attempt.token, record.parameters, record.label, first_sent=attempt.submitted_at
    )
    try:
        return backend.submit(request).run_id
    except SubmitRejected:
        return None


def _wait_ended(
    backend: DatabricksBackend,
    run_ids: list[str],
    poll_interval: float,
    wait: float,
    sleep: Callable[[float], None],
) -> list[str]:
    """Wait until the workspace reports every run of ``run_ids`` ended; a line for
    those still going after ``wait`` seconds."""
    left = set(run_ids)
    deadline = time.monotonic() + wait
    while left:
        left -= set(backend.poll(sorted(left)))
        if not left or time.monotonic() >= deadline:
            break
        sleep(poll_interval)
    if not left:
        return []
    return [f"Still ending after {wait:.0f} s (cancel sent): runs {', '.join(sorted(left))}"]


def has_ledger(root: Path, backfill_id: str) -> bool:
    """Whether ``--resume backfill_id`` is this project's (a ledger here, or an id no
    backfill could have: its error is the local one)."""
    if backfill_id in backfill_ids(ledger_dir(root)):
        return True
    try:
        job_of_backfill(backfill_id)
    except UsageError:
        return True
    return False


def prepare_journal_resume(
    request: ResumeRequest,
    *,
    root: Path,
    project_loader: Callable[[], tuple[ProjectConfig, Registry]],
    client: WorkspaceClient | None = None,
) -> PreparedBackfill:
    """:func:`..prepare.resume.prepare_resume` of a detached backfill, from its journal.

    Raises:
        UsageError: no journal of that id, or a controller run of it is active.
        WorkspaceRejected: a cancelled or paused backfill and no CAN_MANAGE_RUN.
        WorkspaceUnreachable: the workspace did not answer.
    """
    bid = request.backfill_id

    def find() -> JournalPlace:
        place = locate_journal(bid, request.connection, root, client=client)
        read_journal(place.client, place.job_id, bid)  # there is a journal of it
        return place

    place = read_detached(bid, root, find)
    controller = active_controller(place)
    if controller is not None:
        raise UsageError(
            f"backfill {bid} is being run by controller run {controller}: follow it with "
            f"dbxdec backfill watch {bid}, or cancel it first (dbxdec backfill cancel {bid})"
        )
    # a cancelled or paused backfill resumed: unpause first, or a later controller
    # would cancel again
    steering = current_control(control_ops(place.client, place.job_id, bid))
    if steering != "running":
        steerer = require_steering(
            place.client, place.job_id, job=place.remote_name, action="resume", backfill_id=bid
        )
        append_control(place.client, place.job_id, bid, "unpause", by=steerer.user)
    writer = f"cli:{this_user()}@{this_host()}"
    ledger = open_journal(place.client, place.job_id, bid, writer=writer)
    return prepare_resume(
        request, root=root, project_loader=project_loader, client=place.client, ledger=ledger
    )


def controller_job_id(place: JournalPlace) -> int:
    """The deployed controller job of ``place``'s deployment (:class:`UsageError`: not
    deployed)."""
    remote = find_job(
        place.client, CONTROLLER_JOB, name_prefix=place.name_prefix, dev_mode=place.dev_mode
    )
    return remote.job_id


def controller_runs(
    client: WorkspaceClient, controller_id: int, backfill_id: str, *, active_only: bool
) -> list[BaseRun]:
    """The controller job's runs for backfill ``backfill_id`` (its active ones only)."""
    with workspace_errors(client.config.host):
        runs = client.jobs.list_runs(job_id=controller_id, active_only=active_only or None)
        return [run for run in runs if run_parameters(run).get("backfill_id") == backfill_id]


def next_generation(
    client: WorkspaceClient, controller_id: int, *, job_id: int, backfill_id: str
) -> int:
    """One more than the highest generation of the backfill's controller runs listed or
    recorded (1 when none)."""
    runs = controller_runs(client, controller_id, backfill_id, active_only=False)
    seen = [int(g) for run in runs if (g := run_parameters(run).get("generation", "")).isdigit()]
    return max([*seen, recorded_generation(client, job_id, backfill_id)]) + 1


def recorded_generation(client: WorkspaceClient, job_id: int, backfill_id: str) -> int:
    """The highest generation recorded as started (0: none, or a damaged record)."""
    with workspace_errors(client.config.host):
        text = journal_place(client, job_id, backfill_id).read(GENERATION_FILE)
    try:
        return int(json.loads(text or "{}").get("generation", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


def record_generation(client: WorkspaceClient, job_id: int, backfill_id: str, number: int) -> None:
    """Record that generation ``number`` started (best effort)."""
    with contextlib.suppress(DbxdecError, OSError):  # SDK errors are OSErrors
        if number > recorded_generation(client, job_id, backfill_id):
            place = journal_place(client, job_id, backfill_id)
            place.write(GENERATION_FILE, json.dumps({"generation": number}) + "\n")


def start_controller(place: JournalPlace, controller_id: int, *, suffix: str) -> int:
    """Run-now the controller for ``place``'s backfill with token
    ``dbxdec-ctl-<id>-<suffix>``; the run id."""
    client = place.client
    generation = next_generation(
        client, controller_id, job_id=place.job_id, backfill_id=place.backfill_id
    )
    with workspace_errors(client.config.host):
        waiter = client.jobs.run_now(
            controller_id,
            job_parameters={
                "backfill_id": place.backfill_id,
                "job_id": str(place.job_id),
                "generation": str(generation),
            },
            idempotency_token=controller_token(place.backfill_id, suffix),
        )
    record_generation(client, place.job_id, place.backfill_id, generation)
    return int(waiter.run_id)
