"""The pause marker: which settings of a job a backfill paused, their ``pause_status``
before, and who holds the pause; written before the pausing request and deleted once the
settings are back, one file per (job, holder) in a :class:`~.place.Place`:

* from this machine: ``<project>/.dbxdec/paused/<job>-<job_id>/<hold id>.json``, held by
  its process (:class:`ProcessHolder`), changed under an ``flock`` of the folder's ``.lock``;
* detached: ``/Shared/dbxdec/paused/job-<job_id>/<backfill id>.json`` (or
  ``$DBXDEC_PAUSED_DIR``), held while ``runs/list?job_id=<controller>&active_only=true``
  lists a run with its ``backfill_id`` (:class:`RunHolder`; "An active run is a run in the
  QUEUED, PENDING, RUNNING, or TERMINATING", databricks-sdk-py ``JobsAPI.list_runs``).
  A controller job that no longer exists holds nothing; when the workspace cannot say,
  the pause is kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import DbxdecError, LocalStateProblem, UsageError, WorkspaceRejected
from ...runtime.triggers.run_history import run_parameters
from ..workspace.workspace import environment_problem, first_line
from .claims import process_alive, this_host, when
from .place import LocalPlace, Place, WorkspacePlace

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

PAUSABLE = ("schedule", "trigger", "continuous")
"""The job settings that start runs on their own, each with a ``pause_status``."""
WORDS = {"schedule": "schedule", "trigger": "trigger", "continuous": "continuous run"}
PAUSED_DIR = "/Shared/dbxdec/paused"
PAUSED_DIR_ENV = "DBXDEC_PAUSED_DIR"

HELD: set[str] = set()
"""Hold ids of the pauses this process holds now."""


@dataclass(frozen=True, slots=True)
class ProcessHolder:
    """A backfill driven by a process on a machine; ``hold_id`` names its marker."""

    hostname: str
    pid: int
    hold_id: str

    @property
    def name(self) -> str:
        return self.hold_id

    @property
    def title(self) -> str:
        return "the backfill"

    @property
    def who(self) -> str:
        return f"pid {self.pid} on {self.hostname}"

    def alive(self) -> bool:
        if self.hostname != this_host():
            return True  # another machine's process: no way to tell, so it may run
        if self.pid == os.getpid():
            return self.hold_id in HELD
        return process_alive(self.pid)


@dataclass(frozen=True, slots=True)
class RunHolder:
    """A detached backfill, alive while a run of its controller job is active."""

    backfill_id: str
    controller_job_id: int

    @property
    def name(self) -> str:
        return self.backfill_id

    @property
    def title(self) -> str:
        return f"backfill {self.backfill_id}"

    @property
    def who(self) -> str:
        return self.backfill_id


Holder = ProcessHolder | RunHolder


def others(holders: list[Holder], *, running: bool = False) -> str:
    """The other holders of a pause, for a line: ``backfill bf-1, bf-2`` or ``another
    backfill (pid 7 on h)``."""
    who = ", ".join(h.who for h in holders)
    if all(isinstance(h, RunHolder) for h in holders):
        return f"backfill {who}"
    return f"the backfill still running ({who})" if running else f"another backfill ({who})"


def ended(marker: PauseMarker) -> str:
    """The holder of a stale marker, for a line."""
    if isinstance(marker.holder, RunHolder):
        backfill = marker.holder.backfill_id
        return f"detached backfill {backfill} ({when(marker.paused_at)}), which no longer runs"
    return f"an interrupted backfill ({when(marker.paused_at)})"


@dataclass(frozen=True, slots=True)
class PauseMarker:
    """One holder's pause: ``original`` maps each paused setting to its ``pause_status``
    before the first holder paused it (``None``: unset, read as UNPAUSED); ``host`` the
    workspace of a local marker; ``trigger`` the job's trigger as the project declares it,
    written back on restore: ``jobs/get`` never returns a table update's ``condition``
    (databricks/cli#6315)."""

    job: str
    job_id: int
    original: Mapping[str, str | None]
    holder: Holder
    paused_at: float
    host: str | None = None
    trigger: Mapping[str, Any] | None = None

    def to_text(self) -> str:
        # a trigger's alone is its bare status (the detached markers' format)
        original = self.original
        data: dict[str, object] = {
            "format": 1,
            "job": self.job,
            "job_id": self.job_id,
            "original": original["trigger"] if set(original) == {"trigger"} else dict(original),
            "paused_at": self.paused_at,
        }
        if isinstance(self.holder, RunHolder):
            data["backfill_id"] = self.holder.backfill_id
            data["controller_job_id"] = self.holder.controller_job_id
        else:
            data |= {"hostname": self.holder.hostname, "pid": self.holder.pid}
            data |= {"hold_id": self.holder.hold_id, "host": self.host}
        if self.trigger is not None:
            data["trigger"] = dict(self.trigger)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> PauseMarker:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a damaged marker."""
        data = json.loads(text)
        if data.get("format") != 1:
            raise ValueError(f"unknown format {data.get('format')!r}")
        raw = data["original"]
        if not isinstance(raw, dict):
            raw = {"trigger": raw}
        original = {str(k): None if v is None else str(v) for k, v in raw.items()}
        if not set(original) <= set(PAUSABLE):
            raise ValueError(f"unknown settings {sorted(set(original) - set(PAUSABLE))}")
        holder: Holder
        if "pid" in data:
            holder = ProcessHolder(str(data["hostname"]), int(data["pid"]), str(data["hold_id"]))
        else:
            holder = RunHolder(str(data["backfill_id"]), int(data["controller_job_id"]))
        host = data.get("host")
        trigger = data.get("trigger")
        if trigger is not None and not isinstance(trigger, dict):
            raise ValueError("trigger is not an object")
        return cls(
            job=str(data["job"]),
            job_id=int(data["job_id"]),
            original=original,
            holder=holder,
            paused_at=float(data["paused_at"]),
            host=None if host is None else str(host),
            trigger=trigger,
        )


Found = tuple[str, PauseMarker | str]
"""A marker file's path and its marker, or why it cannot be read."""


class Markers:
    """The pause markers of one deployed job, in ``place``."""

    def __init__(self, place: Place, *, option: str) -> None:
        self.place = place
        self.option = option

    def path(self, holder: Holder) -> str:
        return f"{self.place.folder}/{holder.name}.json"

    def read(self) -> list[Found]:
        """Every marker, oldest first (the damaged ones last)."""
        found: list[Found] = []
        with self.errors():
            names = [n for n in self.place.names() if n.endswith(".json")]
            for name in names:
                text = self.place.read(name)
                if text is None:  # deleted since the listing (its holder released)
                    continue
                try:
                    found.append((f"{self.place.folder}/{name}", PauseMarker.from_text(text)))
                except (ValueError, KeyError, TypeError, AttributeError) as err:
                    found.append((f"{self.place.folder}/{name}", f"{type(err).__name__}: {err}"))
        return sorted(
            found, key=lambda f: f[1].paused_at if isinstance(f[1], PauseMarker) else 1e20
        )

    def write(self, marker: PauseMarker) -> None:
        with self.errors():
            self.place.make()
            self.place.write(f"{marker.holder.name}.json", marker.to_text())

    def delete(self, path: str) -> None:
        with self.errors():
            self.place.delete(path.rsplit("/", 1)[-1])

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's ``.lock`` (local folders on platforms with ``fcntl``)."""
        if not isinstance(self.place, LocalPlace):
            yield
            return
        try:
            import fcntl
        except ImportError:  # Windows: markers are not locked
            yield
            return
        with self.errors():
            self.place.make()
            handle = open(self.place.path / ".lock", "a+b")  # noqa: SIM115 (closed below)
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextmanager
    def errors(self) -> Iterator[None]:
        """One line for a marker folder that cannot be read or written."""
        folder = self.place.folder
        try:
            yield
        except DbxdecError:
            raise
        except OSError as exc:
            if not isinstance(self.place, WorkspacePlace):
                raise LocalStateProblem(
                    f"cannot use {folder} ({exc.strerror or exc}): free space or fix the "
                    ".dbxdec folder's permissions, then run the command again"
                ) from None
            from databricks.sdk.errors import PermissionDenied
            from databricks.sdk.errors.base import DatabricksError

            if isinstance(exc, PermissionDenied):
                raise WorkspaceRejected(
                    f"the workspace refused to let these credentials write {self.place.what} "
                    f"{folder} ({first_line(exc)}): ask a workspace admin for CAN EDIT on it, "
                    f"{self.place.advice}"
                ) from None
            problem = environment_problem(exc, host=self.place.client.config.host)
            if problem is not None:
                raise problem from None
            if isinstance(exc, DatabricksError):
                raise UsageError(
                    f"{self.option}: could not use the trigger pause markers in {folder} "
                    f"({first_line(exc)})"
                ) from None
            raise


def paused_dir(root: Path) -> Path:
    """Where the local pause markers of a project live."""
    return root / ".dbxdec" / "paused"


def paused_folder(job_id: int) -> str:
    """The workspace folder of deployed job ``job_id``'s detached pauses."""
    base = (os.environ.get(PAUSED_DIR_ENV) or PAUSED_DIR).rstrip("/")
    return f"{base}/job-{job_id}"


def workspace_markers(client: WorkspaceClient, job_id: int, option: str) -> Markers:
    """The markers of deployed job ``job_id`` held by detached backfills."""
    advice = f"set {PAUSED_DIR_ENV} to a folder they can write, or run without {option}"
    folder = paused_folder(job_id)
    place = WorkspacePlace(client, folder, what="the trigger pauses folder", advice=advice)
    return Markers(place, option=option)


class Liveness:
    """Whether each marker's holder still runs: ``(True/False, "")``, or ``(None, why)``
    when the workspace cannot say; one ``runs/list`` per controller job."""

    def __init__(self, client: WorkspaceClient) -> None:
        self.client = client
        self.seen: dict[int, set[str] | str] = {}

    def of(self, holder: Holder) -> tuple[bool | None, str]:
        if isinstance(holder, ProcessHolder):
            return holder.alive(), ""
        job_id = holder.controller_job_id
        if job_id not in self.seen:
            self.seen[job_id] = self._active(job_id)
        active = self.seen[job_id]
        if isinstance(active, str):
            return None, active
        return holder.backfill_id in active, ""

    def _active(self, controller_job_id: int) -> set[str] | str:
        from databricks.sdk.errors import InvalidParameterValue, NotFound, ResourceDoesNotExist

        try:
            runs = self.client.jobs.list_runs(job_id=controller_job_id, active_only=True)
            return {run_parameters(run).get("backfill_id", "") for run in runs}
        except (NotFound, ResourceDoesNotExist, InvalidParameterValue) as exc:
            # an unknown job id: 400 INVALID_PARAMETER_VALUE "Job N does not exist."
            if isinstance(exc, InvalidParameterValue) and "does not exist" not in str(exc):
                return first_line(exc)
            return set()  # the controller job is gone, and its runs with it
        except OSError as exc:  # unreachable, refused: keep the pause
            return reason(self.client, exc)


def reason(client: WorkspaceClient, err: BaseException) -> str:
    if isinstance(err, DbxdecError):
        return err.render()
    problem = environment_problem(err, host=client.config.host)
    return problem.render() if problem is not None else first_line(err)


def listed(fields: Mapping[str, object] | tuple[str, ...]) -> str:
    words = [WORDS[f] for f in PAUSABLE if f in fields]
    return " and ".join(words) if words else "schedule"
