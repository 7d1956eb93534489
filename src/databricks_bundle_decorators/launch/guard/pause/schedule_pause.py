"""A job's schedule and a backfill side by side (``dbxdec backfill --pause-schedule``).

**Pausing.** :meth:`SchedulePause.hold` sets ``pause_status: PAUSED`` on the job's
``schedule``, ``trigger`` and ``continuous`` settings (those it has and that run) for the
backfill, keeping everything else of them (cron expression, time zone), and puts back
exactly the ``pause_status`` values it found when the block ends -- normally, on an
exception or on Ctrl-C.

**Crashes.** Before the pausing request is sent, a marker
``<project>/.dbxdec/paused/<job>-<job_id>.json`` records the original values and who
holds the pause (host, pid). A launcher that dies (SIGKILL, a lost laptop) leaves the
marker behind; :func:`restore_stale_pauses`, called when the next ``dbxdec`` command for
the job starts, puts the values back and deletes it. A marker whose holder still runs is
left alone, and a second backfill of the same job joins the pause: the schedule is
restored when the last of them ends.

**Without pausing.** :func:`slot_policy` keeps one of the job's ``max_concurrent_runs``
free for the scheduled run, or warns that scheduled runs will queue behind the backfill
when the job allows one run at a time.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....errors import DbxdecError, LocalStateProblem, UsageError, WorkspaceRejected
from ...backends.databricks_backend import RemoteJob
from ...workspace.workspace import environment_problem, first_line
from ..claims import this_host, when
from .pause_markers import (
    HELD,
    PAUSABLE,
    WORDS,
    Holder,
    PauseMarker,
    locked,
    marker_path,
    paused_dir,
    read_marker,
    remove_marker,
    write_marker,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = [
    "PAUSABLE",
    "PauseMarker",
    "SchedulePause",
    "api_errors",
    "job_blocks",
    "marker_path",
    "restore_settings",
    "restore_stale_pauses",
    "set_statuses",
    "slot_policy",
    "status_of",
]


class SchedulePause:
    """Pause deployed job ``job_id``'s schedule while a backfill runs.

    Args:
        client: The workspace the job lives in.
        root: The project root (the marker goes under ``.dbxdec/paused``).
        job: The dbxdec job name, for messages and the marker's name.
        job_id: The deployed job.
        fields: The settings to pause (default all of :data:`PAUSABLE`; ``("trigger",)``
            for a dependant's trigger, :mod:`.trigger_pause`). Holds of other fields of
            the same job share its marker: each is restored when the last holder ends.
        option: What the user can drop to avoid the pause (for error lines).

    After :meth:`hold`, :attr:`restore_message` says what its end did.
    """

    def __init__(
        self,
        client: WorkspaceClient,
        *,
        root: Path,
        job: str,
        job_id: int,
        fields: Sequence[str] = PAUSABLE,
        option: str = "--pause-schedule",
    ) -> None:
        self.client = client
        self.job = job
        self.job_id = job_id
        self.fields = tuple(f for f in PAUSABLE if f in fields)
        self.option = option
        self.path = marker_path(root, job, job_id)
        self.restore_message: str | None = None

    @contextmanager
    def hold(self) -> Iterator[str]:
        """Pause the schedule for the block; yields the line saying what was done.

        A job with nothing to pause (no schedule, or one already paused by hand) is left
        as it is and the line says so. The end of the block never raises: a restore that
        fails leaves the marker for the next command and :attr:`restore_message` says so.

        Raises:
            UsageError: the workspace refused the change (the line names the job).
            WorkspaceRejected: the credentials or the permission (CAN MANAGE) were refused.
            WorkspaceUnreachable: the workspace did not answer.
            LocalStateProblem: the marker cannot be written.
        """
        holder = Holder(this_host(), os.getpid(), secrets.token_hex(8))
        HELD.add(holder.hold_id)
        try:
            with locked(self.path):
                message, holding = self._pause(holder)
            if not holding:
                HELD.discard(holder.hold_id)
                yield message
                return
            try:
                yield message
            finally:
                HELD.discard(holder.hold_id)
                with locked(self.path):
                    self.restore_message = self._release(holder)
        finally:
            HELD.discard(holder.hold_id)

    def _pause(self, holder: Holder) -> tuple[str, bool]:
        with api_errors(self.client, f"read the settings of job {self.job!r}", self.option):
            found = job_blocks(self.client, self.job_id)
        blocks = {f: b for f, b in found.items() if f in self.fields}
        marker = read_marker(self.path)
        to_pause = {f: status_of(b) for f, b in blocks.items() if status_of(b) != "PAUSED"}
        if not to_pause and marker is None:
            if not blocks:
                return f"job {self.job!r} has no schedule or trigger: nothing to pause", False
            return (
                f"the {_listed(blocks)} of job {self.job!r} is already paused: left as it is",
                False,
            )
        others = [h for h in marker.holders if h.alive()] if marker else []
        original = dict(marker.original) if marker else {}
        for field, status in to_pause.items():
            original.setdefault(field, status)
        write_marker(  # before the request: a crash after it is restored by the next command
            self.path,
            PauseMarker(
                job=self.job,
                job_id=self.job_id,
                host=self.client.config.host,
                original=original,
                holders=(marker.holders if marker else ()) + (holder,),
                paused_at=marker.paused_at if marker else time.time(),
            ),
        )
        if to_pause:
            try:
                doing = f"pause the {_listed(to_pause)} of job {self.job!r}"
                with api_errors(self.client, doing, self.option):
                    set_statuses(
                        self.client, self.job_id, blocks, dict.fromkeys(to_pause, "PAUSED")
                    )
            except BaseException:
                HELD.discard(holder.hold_id)
                self._release(holder)  # the request may have been applied: put it back
                raise
        if others:
            return (
                f"the {_listed(original)} of job {self.job!r} is paused for another backfill "
                f"({', '.join(h.who for h in others)}): it stays paused until both end"
            ), True
        if to_pause and marker is None:
            return (
                f"paused the {_listed(to_pause)} of job {self.job!r} for the backfill: it is "
                "restored when the backfill ends"
            ), True
        return (
            f"the {_listed(original)} of job {self.job!r} was left paused by an interrupted "
            f"backfill ({when(marker.paused_at if marker else time.time())}): it stays paused "
            "for this one and is restored when it ends"
        ), True

    def _release(self, holder: Holder) -> str:
        """Drop ``holder``; restore the settings if no other holder runs. Never raises."""
        try:
            marker = read_marker(self.path)
        except DbxdecError as err:
            return f"could not restore the schedule of job {self.job!r}: {err.render()}"
        if marker is None:
            return f"the schedule of job {self.job!r} was already restored"
        what = f"the {_listed(marker.original)} of job {self.job!r}"
        rest = tuple(h for h in marker.holders if h.hold_id != holder.hold_id)
        live = [h for h in rest if h.alive()]
        try:
            if live:
                write_marker(self.path, replace(marker, holders=rest))
                running = ", ".join(h.who for h in live)
                return f"{what} stays paused for the backfill still running ({running})"
            restored = restore_settings(self.client, marker.job, marker.job_id, marker.original)
        except DbxdecError as err:
            with contextlib.suppress(DbxdecError):
                write_marker(self.path, replace(marker, holders=rest))
            return (
                f"could not restore {what} ({err.render()}): the next dbxdec command for "
                "this job restores it, or unpause it in the Jobs UI"
            )
        remove_marker(self.path)
        return f"restored {what}: {restored}"


def restore_stale_pauses(client: WorkspaceClient, root: Path, job: str | None) -> list[str]:
    """Put back the schedules that backfills which no longer run left paused.

    Args:
        client: The workspace of the command.
        root: The project root.
        job: Only this dbxdec job's pauses (``None``: every job's).

    Returns:
        One line per marker dealt with: restored, or why it could not be (the marker is
        kept, and the next command tries again). Pauses held by running backfills are
        left alone and not mentioned.
    """
    folder = paused_dir(root)
    if not folder.is_dir():
        return []
    messages: list[str] = []
    for path in sorted(folder.glob("*.json")):
        with locked(path):
            try:
                marker = read_marker(path)
            except LocalStateProblem as err:
                messages.append(err.render())
                continue
            if marker is None or (job is not None and marker.job != job):
                continue
            if any(h.alive() for h in marker.holders):
                continue
            what = f"the {_listed(marker.original)} of job {marker.job!r}"
            if not marker.host or _same_host(marker.host, client.config.host or marker.host):
                try:
                    restored = restore_settings(client, marker.job, marker.job_id, marker.original)
                except DbxdecError as err:
                    messages.append(
                        f"{what} stays paused since an interrupted backfill: could not restore "
                        f"it ({err.render()}); the next dbxdec command tries again"
                    )
                    continue
                remove_marker(path)
                messages.append(
                    f"restored {what}, left paused by an interrupted backfill "
                    f"({when(marker.paused_at)}): {restored}"
                )
            else:
                messages.append(
                    f"{what} (id {marker.job_id}) in {marker.host} stays paused since an "
                    "interrupted backfill: run a dbxdec command for it against that workspace"
                )
    return messages


def slot_policy(remote: RemoteJob, cap: int, *, paused: bool) -> tuple[int, list[str]]:
    """The backfill's concurrency beside the job's running schedule.

    Args:
        remote: The deployed job (its ``schedule_paused`` and ``max_concurrent_runs``).
        cap: The backfill's ``--max-concurrent``.
        paused: The backfill pauses the schedule (``--pause-schedule``).

    Returns:
        The cap to use and the warning lines. A job whose schedule runs and that allows
        N > 1 concurrent runs leaves one slot to the schedule (the cap is at most N - 1);
        with N = 1 the cap is kept and the line warns that scheduled runs will queue
        behind the backfill (or be skipped, with queueing off).

    >>> job = RemoteJob(1, "nightly", 4, True, schedule_paused=False)
    >>> slot_policy(job, 10, paused=False)[0]
    3
    >>> slot_policy(job, 10, paused=True)
    (10, [])
    """
    if paused or remote.schedule_paused is not False or remote.max_concurrent_runs < 1:
        return cap, []
    limit = remote.max_concurrent_runs
    if limit > 1:
        if cap <= limit - 1:
            return cap, []
        return limit - 1, [
            f"job {remote.name!r} runs on a schedule and allows {limit} concurrent runs: the "
            f"backfill uses at most {limit - 1} so a scheduled run always has a slot "
            "(--pause-schedule pauses the schedule during the backfill instead)"
        ]
    fate = "queue behind" if remote.queue_enabled else "be skipped while"
    return cap, [
        f"job {remote.name!r} runs on a schedule and allows 1 concurrent run: scheduled runs "
        f"will {fate} the backfill's runs (raise max_concurrent_runs, or pass "
        "--pause-schedule to pause the schedule during the backfill)"
    ]


# -- the Jobs API ---------------------------------------------------------------------


def job_blocks(client: WorkspaceClient, job_id: int) -> dict[str, Any]:
    settings = client.jobs.get(job_id).settings
    found = {f: getattr(settings, f, None) for f in PAUSABLE}
    return {f: b for f, b in found.items() if b is not None}


def status_of(block: Any) -> str | None:
    status = getattr(block, "pause_status", None)
    return None if status is None else str(status.value)


def set_statuses(
    client: WorkspaceClient,
    job_id: int,
    blocks: Mapping[str, Any],
    statuses: Mapping[str, str | None],
) -> None:
    """Replace each named setting by itself with another ``pause_status``."""
    from databricks.sdk.service.jobs import JobSettings, PauseStatus

    changed = {
        field: replace(blocks[field], pause_status=None if s is None else PauseStatus(s))
        for field, s in statuses.items()
    }
    client.jobs.update(job_id, new_settings=JobSettings(**changed))


def restore_settings(
    client: WorkspaceClient, job: str, job_id: int, original: Mapping[str, str | None]
) -> str:
    """Put ``original`` (setting -> ``pause_status`` before the pause) back on deployed job
    ``job_id`` (dbxdec job ``job``); what was restored, for the message."""
    from databricks.sdk.errors import InvalidParameterValue, NotFound, ResourceDoesNotExist

    with api_errors(client, f"restore the schedule of job {job!r}"):
        try:
            blocks = job_blocks(client, job_id)
        except (ResourceDoesNotExist, NotFound, InvalidParameterValue) as exc:
            if "does not exist" not in str(exc) and not isinstance(exc, ResourceDoesNotExist):
                raise
            return f"job {job_id} no longer exists"
        wanted = {
            field: status
            for field, status in original.items()
            if field in blocks
            and (status_of(blocks[field]) or "UNPAUSED") != (status or "UNPAUSED")
        }
        if wanted:
            set_statuses(client, job_id, blocks, wanted)
    return ", ".join(f"{WORDS[f]} {s or 'UNPAUSED'}" for f, s in original.items())


@contextmanager
def api_errors(
    client: WorkspaceClient, doing: str, option: str = "--pause-schedule"
) -> Iterator[None]:
    """One line for a failed request: what could not be done, and why."""
    from databricks.sdk.errors import PermissionDenied
    from databricks.sdk.errors.base import DatabricksError

    host = client.config.host
    try:
        yield
    except DbxdecError:
        raise
    except PermissionDenied as exc:
        raise WorkspaceRejected(
            f"the workspace at {host} refused to {doing} ({first_line(exc)}): pausing a "
            f"schedule needs CAN MANAGE on the job; ask its owner, or run without {option}"
        ) from None
    except Exception as exc:
        problem = environment_problem(exc, host=host)
        if problem is not None:
            raise problem from None
        if isinstance(exc, DatabricksError):
            raise UsageError(f"{option}: could not {doing} ({first_line(exc)})") from None
        raise


def _listed(fields: Mapping[str, Any]) -> str:
    words = [WORDS[f] for f in PAUSABLE if f in fields]
    return " and ".join(words) if words else "schedule"


def _same_host(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()
