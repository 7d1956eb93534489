"""``dbxdec backfill --resume ID`` of a detached backfill: its journal, from any checkout.

A detached backfill has no ledger file in the project that launched it (its ledger is
the journal in the workspace), so ``--resume ID`` with no local ledger of that id
resumes from the journal: the ledger is opened for writing (its saves append segments,
fenced like a controller's), and this machine's launcher finishes what is left, as
after a crash. A cancelled (or paused) backfill is resumed too: the person resuming
means it to go on, so an ``unpause`` request is recorded first (a controller started
later would otherwise cancel again), which needs the steering permission.

Refused while a controller run of the backfill is active (two launchers of one backfill
would race for the journal): pause or cancel it first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...bundle.project import ProjectConfig
from ...definitions import Registry
from ...errors import UsageError
from ..ledger.claims import this_host, this_user
from ..ledger.journal import (
    append_control,
    control_ops,
    current_control,
    open_journal,
    read_journal,
)
from ..ledger.ledger import ledger_dir
from ..ledger.ledger_store import backfill_ids
from ..plan.request import ResumeRequest
from ..prepare.prepared import PreparedBackfill
from ..prepare.resume import prepare_resume
from ..status.journal_status import job_of_backfill, locate_journal
from .steer_permission import require_steering
from .steering import active_controller

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def has_ledger(root: Path, backfill_id: str) -> bool:
    """Whether ``--resume backfill_id`` is this project's (a ledger file here, or an id
    no backfill could have: its error is the local one)."""
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
    try:
        place = locate_journal(bid, request.connection, root, client=client)
        read_journal(place.client, place.job_id, bid)  # there is a journal of it
    except UsageError as missing:
        raise UsageError(
            f"no backfill {bid!r} in {ledger_dir(root)}, nor a detached one in the workspace "
            f"({missing.render()})"
        ) from None
    controller = active_controller(place)
    if controller is not None:
        raise UsageError(
            f"backfill {bid} is being run by controller run {controller}: follow it with "
            f"dbxdec backfill watch {bid}, or cancel it first (dbxdec backfill cancel {bid})"
        )
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
