"""What the running task reads, pinned and recorded: each Delta table's version is resolved
once per task run, every read of it is made at that version (``versionAsOf``), and the
commit of the task's output carries the versions with the task's code fingerprint
(:class:`~databricks_bundle_decorators.backfill.wire.provenance.Provenance`, in the same
``userMetadata`` as the commit's identity: written with the data or not at all).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from ... import __version__
from ...backfill.wire.provenance import Provenance


@dataclass
class ReadRecorder:
    """The reads of one task run: lowercase table name -> the version they were pinned to."""

    job: str
    task: str
    run_id: str
    code: str
    backfill_id: str = ""
    reads: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pin(self, table: str, resolve: Callable[[], int | None]) -> int | None:
        """The version this run reads ``table`` at: resolved by ``resolve`` on the first
        read, the same for every later one (``None``: the table has no version to pin,
        then it is read as it is and not recorded)."""
        name = table.lower()
        with self._lock:
            if name in self.reads:
                return self.reads[name]
            version = resolve()
            if version is not None:
                self.reads[name] = int(version)
            return version

    def provenance(
        self, job: str, task: str, keys: Sequence[str], column: str | None, checks: Sequence[str]
    ) -> Provenance | None:
        """The record of a write of ``keys`` by this run (``None`` for another task's
        write: only the recorded task's commits carry its reads)."""
        if (job, task) != (self.job, self.task):
            return None
        return Provenance(
            self.job,
            self.task,
            self.run_id,
            code=self.code,
            dbxdec=__version__,
            reads=dict(self.reads),
            keys=tuple(keys),
            column=column,
            checks=tuple(checks),
            backfill_id=self.backfill_id,
        )


_RECORDER: ContextVar[ReadRecorder | None] = ContextVar("dbxdec_read_recorder", default=None)


def current_recorder() -> ReadRecorder | None:
    """The running task's recorder, if a task runs in this context."""
    return _RECORDER.get()


@contextlib.contextmanager
def recording_reads(recorder: ReadRecorder) -> Iterator[None]:
    """Make ``recorder`` pin and record the reads of the task running in this context."""
    token = _RECORDER.set(recorder)
    try:
        yield
    finally:
        _RECORDER.reset(token)


def pinned_version(table: str, resolve: Callable[[], int | None]) -> int | None:
    """The version to read ``table`` at in this task run (``None`` outside one, or for a
    table without versions: read it as it is)."""
    recorder = current_recorder()
    return None if recorder is None else recorder.pin(table, resolve)
