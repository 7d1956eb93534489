"""The pause markers of :mod:`.schedule_pause`: which settings a backfill paused, and who
holds the pause.

``<project>/.dbxdec/paused/<job>-<job_id>.json`` is written (atomically) before the
pausing request is sent and deleted once the settings are back, so a marker left behind
means a backfill ended without restoring them. Each change to a marker happens under an
``flock`` of ``<marker>.lock``, so backfills of one job that start or end at once see
each other's holds.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ....atomic import write_atomically
from ....errors import LocalStateProblem
from ..claims import process_alive, this_host

PAUSABLE = ("schedule", "trigger", "continuous")
"""The job settings that start runs on their own, each with a ``pause_status``."""
WORDS = {"schedule": "schedule", "trigger": "trigger", "continuous": "continuous run"}

HELD: set[str] = set()
"""Hold ids of the pauses this process holds now: its own markers that are not stale
(a marker of this pid outside a ``hold`` is one whose ``hold`` failed to restore)."""


def paused_dir(root: Path) -> Path:
    """Where the pause markers of a project live."""
    return root / ".dbxdec" / "paused"


def marker_path(root: Path, job: str, job_id: int) -> Path:
    """The pause marker of deployed job ``job_id`` (dbxdec job ``job``)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job)
    return paused_dir(root) / f"{safe}-{job_id}.json"


@dataclass(frozen=True, slots=True)
class Holder:
    """A backfill that holds a pause: the process on a machine, and its hold."""

    hostname: str
    pid: int
    hold_id: str

    def alive(self) -> bool:
        if self.hostname != this_host():
            return True  # another machine's process: no way to tell, so it may run
        if self.pid == os.getpid():
            return self.hold_id in HELD
        return process_alive(self.pid)

    @property
    def who(self) -> str:
        return f"pid {self.pid} on {self.hostname}"


@dataclass(frozen=True, slots=True)
class PauseMarker:
    """What a pause changed: ``original`` maps each paused setting (``schedule``,
    ``trigger``, ``continuous``) to its ``pause_status`` before (``None``: unset)."""

    job: str
    job_id: int
    host: str | None
    original: Mapping[str, str | None]
    holders: tuple[Holder, ...]
    paused_at: float

    def to_text(self) -> str:
        data = {
            "version": 1,
            "job": self.job,
            "job_id": self.job_id,
            "host": self.host,
            "original": dict(self.original),
            "holders": [
                {"hostname": h.hostname, "pid": h.pid, "hold_id": h.hold_id} for h in self.holders
            ],
            "paused_at": self.paused_at,
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> PauseMarker:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a damaged marker."""
        data = json.loads(text)
        original = {str(k): None if v is None else str(v) for k, v in data["original"].items()}
        if not set(original) <= set(PAUSABLE):
            raise ValueError(f"unknown settings {sorted(set(original) - set(PAUSABLE))}")
        return cls(
            job=str(data["job"]),
            job_id=int(data["job_id"]),
            host=None if data.get("host") is None else str(data["host"]),
            original=original,
            holders=tuple(
                Holder(str(h["hostname"]), int(h["pid"]), str(h["hold_id"]))
                for h in data["holders"]
            ),
            paused_at=float(data["paused_at"]),
        )


def read_marker(path: Path) -> PauseMarker | None:
    """The marker at ``path``, or ``None`` when there is none.

    Raises:
        LocalStateProblem: the file cannot be read or is damaged.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as err:
        raise LocalStateProblem(f"cannot read {path} ({err.strerror or err})") from None
    try:
        return PauseMarker.from_text(text)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise LocalStateProblem(
            f"{path} is damaged ({type(err).__name__}: {err}): check the job's schedule in "
            "the Jobs UI, then delete the file"
        ) from None


def write_marker(path: Path, marker: PauseMarker) -> None:
    """Write ``marker`` atomically.

    Raises:
        LocalStateProblem: the ``.dbxdec`` folder cannot be written.
    """
    try:
        write_atomically(path, marker.to_text())
    except OSError as err:
        raise LocalStateProblem(
            f"cannot write {path} ({err.strerror or err}): free space or fix the .dbxdec "
            "folder's permissions, then run the command again"
        ) from None


def remove_marker(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``<path>.lock`` (no lock on platforms without ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # Windows: markers are not locked
        yield
        return
    lock = path.with_name(path.name + ".lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "a+b")  # noqa: SIM115 (closed below)
    except OSError as err:
        raise LocalStateProblem(f"cannot write {lock} ({err.strerror or err})") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
