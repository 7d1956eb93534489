"""The dependants' triggers a detached ``--downstream`` backfill pauses, held in the workspace.

A ``--detach`` backfill is driven by controller runs in the workspace, so the laptop
that started it is gone long before the backfill ends: a pid on it cannot hold the
pause, nor a file under ``<project>/.dbxdec/paused/`` (:mod:`.schedule_pause`). Here the
holder is the backfill itself, alive while a run of the controller job for it is active.

**Where.** One workspace file per (dependant job, holding backfill),
``/Shared/dbxdec/paused/job-<job_id>/<backfill id>.json`` (``$DBXDEC_PAUSED_DIR``
replaces ``/Shared/dbxdec/paused``), next to the claims and journals for the same
reasons (:mod:`..lease`: every launcher and controller of the workspace
reaches ``/Shared``). It holds the job's name and id, the backfill id, the controller
job id, the trigger's ``pause_status`` before the pause (``null``: unset) and when it
was paused; never a credential.

**Holding.** :func:`hold_triggers_detached` first restores what ended backfills left
paused on the job, then writes this backfill's marker, then pauses the trigger: a crash
between the two leaves a marker whose backfill has no controller run, which the next
command restores. A second backfill joins a live one's pause: its marker copies the
first marker's original, and the trigger is restored when the last of them ends
(:func:`release_triggers_detached`). A trigger already paused with no marker was paused
by hand: it is left as it is.

**Liveness.** A marker is live while ``runs/list?job_id=<controller>&active_only=true``
lists a run whose ``backfill_id`` job parameter is the marker's ("An active run is a run
in the QUEUED, PENDING, RUNNING, or TERMINATING", databricks-sdk-py
``JobsAPI.list_runs``; see :mod:`...steer.controller_runs`). A controller job that no
longer exists holds nothing. When the workspace cannot say (unreachable, refused), the
marker counts as live and the pause is kept, and the line says so. So a caller starts
the controller run before the hold, or right after it: a dbxdec command for the
dependant between the hold and the ``run-now`` would find no controller run and
restore the trigger.

**Beside local pauses.** These markers and :mod:`.pause_markers`' local ones do not see
each other. If a detached and a local backfill pause the same dependant at once, the
second to start finds the trigger paused with no marker of its own kind and leaves it
as it is (no marker), so the first to end restores the trigger while the other still
writes: the dependant's trigger fires on the rest of that backfill's commits. Nothing
is left paused for good; the one that ends last finds nothing to restore.

Platform facts relied on: ``trigger.pause_status`` is changed with ``jobs/update``
(https://docs.databricks.com/api/workspace/jobs/update, databricks-sdk-py
``jobs.TriggerSettings.pause_status``; see :mod:`.trigger_pause`); workspace files are
written with ``workspace/import`` and read with ``export``/``list``
(https://docs.databricks.com/api/workspace/workspace/import; see
:mod:`..lease`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ....errors import DbxdecError, UsageError
from ..claims import when
from .schedule_pause import api_errors, job_blocks, restore_settings, set_statuses, status_of
from .workspace_markers import (
    BACKFILL_ID,
    OPTION,
    PAUSED_DIR,
    PAUSED_DIR_ENV,
    Liveness,
    WorkspacePause,
    delete_marker,
    marker_errors,
    paused_file,
    paused_folder,
    read_markers,
    reason,
    write_marker,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = [
    "PAUSED_DIR",
    "PAUSED_DIR_ENV",
    "WorkspacePause",
    "hold_triggers_detached",
    "paused_file",
    "release_triggers_detached",
    "restore_stale_workspace_pauses",
]


def hold_triggers_detached(
    client: WorkspaceClient, *, backfill_id: str, controller_job_id: int, jobs: Mapping[str, int]
) -> list[str]:
    """Pause the ``trigger`` of each job of ``jobs`` for the detached backfill.

    Args:
        client: The workspace of the jobs.
        backfill_id: The detached backfill (the controller runs' ``backfill_id``).
        controller_job_id: The deployed ``dbxdec_controller`` job whose runs drive it.
        jobs: dbxdec job name -> deployed job id of each dependant.

    Returns:
        One line per job (paused, joined, left as it is), after the lines of the stale
        markers restored first. Called again for the same backfill (a resume), it keeps
        one marker per job and pauses what was unpaused meanwhile.

    Raises:
        UsageError: a bad backfill id, or the workspace refused a change.
        WorkspaceRejected: the credentials, or a permission (CAN MANAGE on the job, CAN
            EDIT on the markers' folder), were refused.
        WorkspaceUnreachable: the workspace did not answer.
        The triggers this call paused are put back first.
    """
    if not BACKFILL_ID.fullmatch(backfill_id):
        raise UsageError(f"{OPTION}: {backfill_id!r} is not a backfill id")
    lines: list[str] = []
    taken: dict[str, int] = {}  # jobs this call (may have) paused: put back on failure
    try:
        for job, job_id in jobs.items():
            lines += _restore_stale(client, job, job_id, keep=backfill_id)
            lines.append(_hold(client, job, job_id, backfill_id, controller_job_id, taken))
    except BaseException:
        release_triggers_detached(client, backfill_id=backfill_id, jobs=taken)
        raise
    return lines


def release_triggers_detached(
    client: WorkspaceClient, *, backfill_id: str, jobs: Mapping[str, int]
) -> list[str]:
    """Drop the backfill's hold on each job's trigger; restore it when no other live
    detached backfill holds it. Never raises: a restore that fails keeps the marker (the
    next dbxdec command for the job restores it) and its line says so.

    Args:
        client: The workspace of the jobs.
        backfill_id: The detached backfill.
        jobs: dbxdec job name -> deployed job id of each dependant.

    Returns:
        One line per job.
    """
    lines: list[str] = []
    for job, job_id in jobs.items():
        try:
            lines.append(_release(client, job, job_id, backfill_id))
        except (DbxdecError, OSError) as err:  # DatabricksError and requests' are OSErrors
            lines.append(
                f"could not release the trigger of job {job!r} for backfill {backfill_id} "
                f"({reason(client, err)}): its pause marker is kept and the next dbxdec "
                "command for this job restores it"
            )
    return lines


def restore_stale_workspace_pauses(client: WorkspaceClient, job: str, job_id: int) -> list[str]:
    """Put back the trigger of ``job`` that detached backfills which no longer run left
    paused, and delete their markers. Never raises.

    Args:
        client: The workspace of the job.
        job: The dbxdec job name (for the lines).
        job_id: The deployed job.

    Returns:
        One line per marker dealt with (restored, dropped beside a live one, kept because
        it cannot be read or its backfill's liveness cannot be told); nothing for live ones.
    """
    return _restore_stale(client, job, job_id, keep=None)


# -- steps -----------------------------------------------------------------------------


def _hold(
    client: WorkspaceClient,
    job: str,
    job_id: int,
    backfill_id: str,
    controller_job_id: int,
    taken: dict[str, int],
) -> str:
    with api_errors(client, f"read the settings of job {job!r}", OPTION):
        trigger = job_blocks(client, job_id).get("trigger")
    if trigger is None:
        return f"job {job!r} has no trigger: nothing to pause"
    status = status_of(trigger)
    with marker_errors(client, job_id):
        markers = [m for _, m in read_markers(client, job_id) if m is not None]
    own = next((m for m in markers if m.backfill_id == backfill_id), None)
    others = sorted((m for m in markers if m.backfill_id != backfill_id), key=_age)
    if own is None and not others and status == "PAUSED":
        return f"the trigger of job {job!r} is already paused: left as it is"
    first = own or (others[0] if others else None)
    marker = WorkspacePause(
        job=job,
        job_id=job_id,
        backfill_id=backfill_id,
        controller_job_id=controller_job_id,
        original=first.original if first else status,
        paused_at=own.paused_at if own else time.time(),
    )
    if own is None:
        taken[job] = job_id
    with marker_errors(client, job_id):  # before the request: a crash after it is restored
        write_marker(client, marker)
    if status != "PAUSED":
        with api_errors(client, f"pause the trigger of job {job!r}", OPTION):
            set_statuses(client, job_id, {"trigger": trigger}, {"trigger": "PAUSED"})
    if others:
        holders = ", ".join(m.backfill_id for m in others)
        return (
            f"the trigger of job {job!r} is paused for backfill {holders}: it stays paused "
            "until both end"
        )
    if own is not None:
        return f"the trigger of job {job!r} stays paused for backfill {backfill_id}"
    return (
        f"paused the trigger of job {job!r} for backfill {backfill_id}: it is restored "
        "when the backfill ends"
    )


def _release(client: WorkspaceClient, job: str, job_id: int, backfill_id: str) -> str:
    path = paused_file(job_id, backfill_id)
    markers = read_markers(client, job_id) if BACKFILL_ID.fullmatch(backfill_id) else []
    own = next((m for p, m in markers if p == path and m is not None), None)
    if own is None:
        return f"the trigger of job {job!r} was not paused for backfill {backfill_id}"
    others = [(p, m) for p, m in markers if p != path and m is not None]
    live = Liveness(client)
    running = [m.backfill_id for _, m in others if live.of(m)[0] is not False]
    if running:
        delete_marker(client, path)
        return f"the trigger of job {job!r} stays paused for backfill {', '.join(running)}"
    try:
        restored = _restore_trigger(client, own)
    except DbxdecError as err:
        return (
            f"could not restore the trigger of job {job!r} ({err.render()}): its pause marker "
            f"{path} is kept and the next dbxdec command for this job restores it, or "
            "unpause it in the Jobs UI"
        )
    for p in [path, *(p for p, _ in others)]:  # the others' holders ended: nothing to keep
        delete_marker(client, p)
    return f"restored the trigger of job {job!r}: {restored}"


def _restore_stale(
    client: WorkspaceClient, job: str, job_id: int, *, keep: str | None
) -> list[str]:
    """Restore and delete the markers of ``job_id`` whose backfill has no controller run
    (``keep``'s marker is the caller's own and counts as live)."""
    try:
        found = read_markers(client, job_id)
    except (DbxdecError, OSError) as err:
        return [
            f"could not read the trigger pauses of job {job!r} in {paused_folder(job_id)} "
            f"({reason(client, err)}): a trigger a detached backfill left paused stays so"
        ]
    lines: list[str] = []
    live = Liveness(client)
    stale: list[tuple[str, WorkspacePause]] = []
    holding: list[str] = []
    for path, marker in found:
        if marker is None:
            lines.append(
                f"{path} is not a readable trigger pause marker: check the trigger of job "
                f"{job!r} in the Jobs UI, then delete the file"
            )
        elif marker.backfill_id == keep:
            holding.append(marker.backfill_id)
        else:
            alive, why = live.of(marker)
            if alive is False:
                stale.append((path, marker))
                continue
            holding.append(marker.backfill_id)
            if alive is None:
                lines.append(
                    f"the trigger of job {job!r} stays paused for detached backfill "
                    f"{marker.backfill_id}: could not tell whether it still runs ({why})"
                )
    if not stale:
        return lines
    what = f"the trigger of job {job!r}"
    try:
        first = min((m for _, m in stale), key=_age)
        restored = "" if holding else _restore_trigger(client, first)
        for path, marker in stale:
            delete_marker(client, path)
            ended = f"detached backfill {marker.backfill_id} ({when(marker.paused_at)})"
            lines.append(
                f"dropped the pause of {what} by {ended}, which no longer runs: it stays "
                f"paused for backfill {', '.join(holding)}"
                if holding
                else f"restored {what}, left paused by {ended}, which no longer runs: {restored}"
            )
    except (DbxdecError, OSError) as err:
        lines.append(
            f"{what} stays paused since a detached backfill ended: could not restore it "
            f"({reason(client, err)}); the next dbxdec command for this job tries again"
        )
    return lines


def _restore_trigger(client: WorkspaceClient, marker: WorkspacePause) -> str:
    """Put the trigger's original ``pause_status`` back (as :mod:`.schedule_pause` does)."""
    return restore_settings(client, marker.job, marker.job_id, {"trigger": marker.original})


def _age(marker: WorkspacePause) -> float:
    return marker.paused_at
