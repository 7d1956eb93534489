"""Pausing a job's schedule, trigger or continuous run for a backfill, and putting it back.

:class:`Pause` sets ``pause_status: PAUSED`` on the settings of a deployed job that start
runs on their own, keeping the rest, and puts back exactly the values it found. Its
marker (:mod:`...ledger.marker`) is written before the pausing request: a holder that
ends without restoring leaves it, and :func:`restore_stale` (at the next ``dbxdec``
command for the job) restores and deletes it. Holders of one job join: the settings are
restored when the last ends. :class:`SchedulePause` is the hold of a backfill driven from
this machine; a detached backfill holds through its controller runs (:mod:`.trigger_pause`).
:func:`slot_policy` is the alternative to pausing: a free slot for the scheduled run.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....errors import DbxdecError, UsageError, WorkspaceRejected
from ...backends.databricks_backend import RemoteJob
from ...ledger.claims import this_host, when
from ...ledger.marker import (
    HELD,
    PAUSABLE,
    WORDS,
    Holder,
    Liveness,
    Markers,
    PauseMarker,
    ProcessHolder,
    ended,
    listed,
    others,
    paused_dir,
    reason,
)
from ...ledger.place import LocalPlace
from ...workspace.workspace import environment_problem, first_line

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


class Pause:
    """``holder``'s pause of ``fields`` of deployed job ``job_id``, marked in ``markers``.

    Args:
        fields: The settings to pause (default all of :data:`PAUSABLE`).
        option: What the user can drop to avoid the pause (for error lines).
        declared_trigger: The job's ``trigger`` as the project declares it, written back
            in place of the one ``jobs/get`` returns, which lacks a table update's
            ``condition``.
        force_trigger: Pause a deployed table-update trigger the project does not
            declare (``--force-trigger-pause``); without it such a pause is refused.
    """

    def __init__(
        self,
        client: WorkspaceClient,
        markers: Markers,
        *,
        job: str,
        job_id: int,
        holder: Holder,
        fields: Sequence[str] = PAUSABLE,
        option: str = "--pause-schedule",
        declared_trigger: Mapping[str, Any] | None = None,
        force_trigger: bool = False,
    ) -> None:
        self.client = client
        self.markers = markers
        self.job = job
        self.job_id = job_id
        self.holder = holder
        self.fields = tuple(f for f in PAUSABLE if f in fields)
        self.option = option
        self.declared_trigger = declared_trigger
        self.force_trigger = force_trigger

    def take(self) -> tuple[str, bool]:
        """Pause the settings (the marker first); the line saying what was done, and
        whether this call wrote the holder's marker.

        Raises:
            UsageError: the workspace refused the change, or the trigger to pause is an
                undeclared table update (see ``force_trigger``).
            WorkspaceRejected, WorkspaceUnreachable: refused (CAN MANAGE) or no answer.
            LocalStateProblem: a local marker cannot be written.
        """
        with self.markers.locked():
            with api_errors(self.client, f"read the settings of job {self.job!r}", self.option):
                found = job_blocks(self.client, self.job_id)
            blocks = {f: b for f, b in found.items() if f in self.fields}
            markers = [m for _, m in self.markers.read() if isinstance(m, PauseMarker)]
            own = next((m for m in markers if m.holder.name == self.holder.name), None)
            rest = [m for m in markers if m is not own]
            to_pause = {f: status_of(b) for f, b in blocks.items() if status_of(b) != "PAUSED"}
            if not markers and not to_pause:
                if not blocks:
                    nothing = "schedule or trigger" if len(self.fields) > 1 else listed(self.fields)
                    return f"job {self.job!r} has no {nothing}: nothing to pause", False
                what = f"the {listed(blocks)} of job {self.job!r}"
                return f"{what} is already paused: left as it is", False
            original: dict[str, str | None] = {}
            for marker in markers:  # oldest first: the status before the first pause
                for field, status in marker.original.items():
                    original.setdefault(field, status)
            for field, status in to_pause.items():
                original.setdefault(field, status)
            trigger = self.declared_trigger or _declared(markers)
            warning = self._undeclared(blocks.get("trigger"), trigger, to_pause)
            local = isinstance(self.holder, ProcessHolder)
            self.markers.write(  # before the request: a crash after it is restored later
                PauseMarker(
                    job=self.job,
                    job_id=self.job_id,
                    original=original,
                    holder=self.holder,
                    paused_at=own.paused_at if own else time.time(),
                    host=self.client.config.host if local else None,
                    trigger=trigger,
                )
            )
            if to_pause:
                try:
                    doing = f"pause the {listed(to_pause)} of job {self.job!r}"
                    with api_errors(self.client, doing, self.option):
                        statuses = dict.fromkeys(to_pause, "PAUSED")
                        set_statuses(self.client, self.job_id, blocks, statuses, trigger)
                except BaseException:
                    if own is None:
                        self._release()  # the request may have been applied: put it back
                    raise
            line, wrote = self._taken(original, to_pause, own, rest)
            return "\n".join(filter(None, (warning, line))), wrote

    def _taken(
        self,
        original: Mapping[str, str | None],
        to_pause: Mapping[str, str | None],
        own: PauseMarker | None,
        rest: Sequence[PauseMarker],
    ) -> tuple[str, bool]:
        what = f"the {listed(original)} of job {self.job!r}"
        live = Liveness(self.client)
        holding = [m.holder for m in rest if live.of(m.holder)[0] is not False]
        if holding:
            line = f"{what} is paused for {others(holding)}: it stays paused until both end"
            return line, own is None
        if own is not None:
            return f"{what} stays paused for {self.holder.title}", False
        if not rest:
            return (
                f"paused the {listed(to_pause)} of job {self.job!r} for "
                f"{self.holder.title}: it is restored when the backfill ends"
            ), True
        return (
            f"{what} was left paused by an interrupted backfill ({when(rest[0].paused_at)}): "
            "it stays paused for this one and is restored when it ends"
        ), True

    def _undeclared(
        self, block: Any, trigger: Mapping[str, Any] | None, to_pause: Mapping[str, Any]
    ) -> str:
        """``""``, or the warning for pausing a table-update trigger the project does not
        declare (``force_trigger``; without it, refused): ``jobs/get`` never returns its
        ``condition`` (databricks/cli#6315, #6442), so a restore could not put it back."""
        if "trigger" not in to_pause or trigger is not None:
            return ""
        if getattr(block, "table_update", None) is None:
            return ""
        if not self.force_trigger:
            raise UsageError(
                f"job {self.job!r} (id {self.job_id}) has a table-update trigger this "
                "project does not declare: its condition cannot be read back from the "
                "workspace (jobs/get omits it), so restoring it after the pause could "
                "change when it fires; declare it with triggered_by=TableUpdate(...), or "
                "pass --force-trigger-pause to pause it anyway"
            )
        return (
            f"warning: pausing the undeclared table-update trigger of job {self.job!r} "
            "(--force-trigger-pause): its condition is not restored, the restored trigger "
            "fires on the workspace's default condition"
        )

    def release(self) -> str:
        """Drop the holder's marker; restore the settings if no other holder runs.
        Never raises: a restore that fails keeps the marker for the next command."""
        try:
            with self.markers.locked():
                return self._release()
        except (DbxdecError, OSError) as err:  # DatabricksError and requests' are OSErrors
            return (
                f"could not release the {listed(self.fields)} of job {self.job!r} for "
                f"{self.holder.title} ({reason(self.client, err)}): its pause marker is kept "
                "and the next dbxdec command for this job restores it"
            )

    def _release(self) -> str:
        found = [(p, m) for p, m in self.markers.read() if isinstance(m, PauseMarker)]
        path = self.markers.path(self.holder)
        own = next((m for p, m in found if p == path), None)
        if own is None:
            what = f"the {listed(self.fields)} of job {self.job!r}"
            return f"{what} was not paused for {self.holder.title}"
        rest = [(p, m) for p, m in found if p != path]
        live = Liveness(self.client)
        running = [m.holder for _, m in rest if live.of(m.holder)[0] is not False]
        what = f"the {listed(own.original)} of job {self.job!r}"
        if running:
            self.markers.delete(path)
            return f"{what} stays paused for {others(running, running=True)}"
        try:
            restored = restore_settings(
                self.client,
                own.job,
                own.job_id,
                own.original,
                _declared([own, *(m for _, m in rest)]),
            )
        except DbxdecError as err:
            return (
                f"could not restore {what} ({err.render()}): its pause marker {path} is kept "
                "and the next dbxdec command for this job restores it, or unpause it in the "
                "Jobs UI"
            )
        for done in [path, *(p for p, _ in rest)]:  # the others' holders ended
            self.markers.delete(done)
        return f"restored {what}: {restored}"


class SchedulePause:
    """Pause deployed job ``job_id``'s schedule while a backfill of this process runs
    (markers under ``<root>/.dbxdec/paused``; other arguments as :class:`Pause`'s). After
    :meth:`hold`, :attr:`restore_message` says what its end did."""

    def __init__(
        self,
        client: WorkspaceClient,
        *,
        root: Path,
        job: str,
        job_id: int,
        fields: Sequence[str] = PAUSABLE,
        option: str = "--pause-schedule",
        declared_trigger: Mapping[str, Any] | None = None,
        force_trigger: bool = False,
    ) -> None:
        self.client = client
        self.markers = local_markers(root, job, job_id, option)
        self.job, self.job_id, self.fields, self.option = job, job_id, fields, option
        self.declared_trigger = declared_trigger
        self.force_trigger = force_trigger
        self.restore_message: str | None = None

    @contextmanager
    def hold(self) -> Iterator[str]:
        """Pause the settings for the block; yields the line saying what was done (raises
        as :meth:`Pause.take`). The block's end never raises: a failed restore keeps the
        marker for the next command."""
        holder = ProcessHolder(this_host(), os.getpid(), secrets.token_hex(8))
        pause = Pause(
            self.client,
            self.markers,
            job=self.job,
            job_id=self.job_id,
            holder=holder,
            fields=self.fields,
            option=self.option,
            declared_trigger=self.declared_trigger,
            force_trigger=self.force_trigger,
        )
        HELD.add(holder.hold_id)
        try:
            message, holding = pause.take()
            if not holding:
                HELD.discard(holder.hold_id)
                yield message
                return
            try:
                yield message
            finally:
                HELD.discard(holder.hold_id)
                self.restore_message = pause.release()
        finally:
            HELD.discard(holder.hold_id)


def local_markers(root: Path, job: str, job_id: int, option: str) -> Markers:
    """The markers of deployed job ``job_id`` (dbxdec job ``job``) held from the project
    at ``root``: ``<root>/.dbxdec/paused/<job>-<job_id>/``."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job)
    return Markers(LocalPlace(paused_dir(root) / f"{safe}-{job_id}"), option=option)


def restore_stale(
    client: WorkspaceClient, markers: Markers, job: str | None, *, keep: str | None = None
) -> list[str]:
    """Put back what holders that no longer run left paused in one job's ``markers`` and
    delete their markers; one line per marker dealt with (restored, dropped beside a
    running holder, or why kept). Never raises for the workspace's failures.

    Args:
        job: Only this dbxdec job's pauses (``None``: every job's).
        keep: The caller's own holder name (counts as running).
    """
    with markers.locked():
        try:
            found = markers.read()
        except (DbxdecError, OSError) as err:
            return [
                f"could not read the pauses in {markers.place.folder} ({reason(client, err)}): a "
                "setting a backfill left paused stays so"
            ]
        lines: list[str] = []
        live = Liveness(client)
        stale: list[tuple[str, PauseMarker]] = []
        holding: list[Holder] = []
        for path, marker in found:
            if isinstance(marker, str):
                lines.append(
                    f"{path} is damaged ({marker}): check the job's schedule and trigger in "
                    "the Jobs UI, then delete the file"
                )
                continue
            if job is not None and marker.job != job:
                continue
            alive, why = (True, "") if marker.holder.name == keep else live.of(marker.holder)
            if alive is not False:
                holding.append(marker.holder)
                if alive is None:
                    lines.append(
                        f"the {listed(marker.original)} of job {marker.job!r} stays paused for "
                        f"detached {marker.holder.title}: could not tell whether it still runs "
                        f"({why})"
                    )
            elif marker.host and not _same_host(marker.host, client.config.host or marker.host):
                lines.append(
                    f"the {listed(marker.original)} of job {marker.job!r} (id {marker.job_id}) "
                    f"in {marker.host} stays paused since an interrupted backfill: run a dbxdec "
                    "command for it against that workspace"
                )
            else:
                stale.append((path, marker))
        if not stale:
            return lines
        first = stale[0][1]
        what = f"the {listed(first.original)} of job {first.job!r}"
        original: dict[str, str | None] = {}
        for _, marker in stale:
            for field, status in marker.original.items():
                original.setdefault(field, status)
        try:
            restored = (
                ""
                if holding
                else restore_settings(
                    client, first.job, first.job_id, original, _declared([m for _, m in stale])
                )
            )
            for path, marker in stale:
                markers.delete(path)
                lines.append(
                    f"dropped the pause of {what} by {ended(marker)}: it stays paused for "
                    f"{others(holding)}"
                    if holding
                    else f"restored {what}, left paused by {ended(marker)}: {restored}"
                )
        except (DbxdecError, OSError) as err:
            lines.append(
                f"{what} stays paused since {ended(first)}: could not restore it "
                f"({reason(client, err)}); the next dbxdec command for this job tries again"
            )
        return lines


def restore_stale_pauses(client: WorkspaceClient, root: Path, job: str | None) -> list[str]:
    """Put back the settings that backfills of this project which no longer run left
    paused (:func:`restore_stale` over every job's local markers, or ``job``'s)."""
    folder = paused_dir(root)
    if not folder.is_dir():
        return []
    lines: list[str] = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        lines += restore_stale(client, Markers(LocalPlace(sub), option="--pause-schedule"), job)
    return lines


def slot_policy(remote: RemoteJob, cap: int, *, paused: bool) -> tuple[int, list[str]]:
    """The backfill's ``--max-concurrent`` ``cap`` beside the job's running schedule, and
    the warning lines: with N > 1 concurrent runs allowed the cap is at most N - 1; with
    N = 1 it is kept and scheduled runs queue behind the backfill (warned).

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
    trigger: Mapping[str, Any] | None = None,
) -> None:
    """Replace each named setting by itself with another ``pause_status``; the ``trigger``
    by its declaration when given (``jobs/get`` lacks a table update's ``condition``:
    databricks/cli#6315)."""
    from databricks.sdk.service.jobs import JobSettings, PauseStatus, TriggerSettings

    changed = {
        field: replace(blocks[field], pause_status=None if s is None else PauseStatus(s))
        for field, s in statuses.items()
    }
    if trigger is not None and "trigger" in statuses:
        status = statuses["trigger"]
        declared = {**trigger, **({} if status is None else {"pause_status": status})}
        changed["trigger"] = TriggerSettings.from_dict(declared)
    client.jobs.update(job_id, new_settings=JobSettings(**changed))


def restore_settings(
    client: WorkspaceClient,
    job: str,
    job_id: int,
    original: Mapping[str, str | None],
    trigger: Mapping[str, Any] | None = None,
) -> str:
    """Put ``original`` (setting -> ``pause_status``) back on deployed job ``job_id``, the
    trigger as declared when known; what was restored, for the message."""
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
            set_statuses(client, job_id, blocks, wanted, trigger)
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


def _declared(markers: Sequence[PauseMarker]) -> Mapping[str, Any] | None:
    """The declared trigger the markers of one job recorded (the newest known)."""
    return next((m.trigger for m in reversed(markers) if m.trigger is not None), None)


def _same_host(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()
