"""``dbxdec backfill pause|unpause|cancel ID``: steering a detached backfill.

Each command checks that the caller may manage the job's runs (:mod:`.steer_permission`),
then appends its request to the backfill's journal (``control/<m>-<op>.json``, created
without overwrite; the latest request wins). The controller reads the requests at every
tick: *paused*, it launches nothing new and the runs in flight finish; *cancelled*, it
cancels the runs in flight and stops. Steering never writes the journal's segments,
except a cancel that no controller would carry out (:mod:`.steer_cancel`).

``unpause`` of a backfill whose controller is not running (a person cancelled its run,
or it was paused for longer than the run lived) starts one: a run-now of the controller
job with the token ``dbxdec-ctl-<id>-u<m>`` (``m``: the number of the unpause request,
so the same request never starts two runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...errors import UsageError, counted
from ..ledger.journal import append_control, read_journal
from ..status.journal_status import JournalPlace
from .controller_runs import controller_job_id, controller_runs, start_controller
from .steer_cancel import cancel_without_controller
from .steer_permission import require_steering

SteerAction = Literal["pause", "unpause", "cancel"]
STEER_ACTIONS: tuple[SteerAction, ...] = ("pause", "unpause", "cancel")


@dataclass(frozen=True, slots=True)
class SteerResult:
    """What a steering command did.

    Attributes:
        action: pause, unpause or cancel.
        seq: The number of the request in the journal.
        by: Who asked (the workspace user or service principal).
        controller_run: The controller run that carries the request out: the one already
            active, or the one ``unpause`` started; ``None`` when there is none.
        started: ``unpause`` started ``controller_run``.
        cancelled: Run ids a cancel with no controller cancelled itself.
        lines: What to show, one line each.
    """

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
    deployed (then no controller runs), unless ``required`` (unpause must start one).

    Raises:
        UsageError: ``required`` and the controller job is not deployed.
    """
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
    """One line when backfill ``place`` is not driven although it has not ended: no
    controller run of it is active (a person cancelled it, or it was never started
    again); ``None`` when one is, or when it has ended."""
    if state != "running" or active_controller(place) is not None:
        return None
    bid = place.backfill_id
    why = "paused" if control == "paused" else "no controller run is active"
    return (
        f"backfill {bid} is not being driven ({why}): nothing is launched until "
        f"dbxdec backfill unpause {bid} starts a controller run"
    )
