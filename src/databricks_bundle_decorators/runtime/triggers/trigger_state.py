"""The trigger state table: each triggered run's keys, its tasks' commits, the watermarks.

One small, append-only Delta table (``TableUpdate(state_table=...)``) that every task of
a run reads, so a run's keys are resolved once and every task and repair of the run
(``{{job.run_id}}``, without the repair count) processes the same ones. Appends do not
conflict with each other ("Isolation levels and write conflicts",
https://docs.databricks.com/aws/en/optimizations/isolation-level). Each row is one fact:

============  ==============  ================================================
kind          name            value
============  ==============  ================================================
``keys``      ``""``          JSON: the run's keys, written keys, versions, pending
``done``      task key        ``""``: the task committed its write in this run
``advance``   ``""``          JSON: processed versions per source and pending keys
``read``      task key        JSON: a keyed run's written keys, each source's version
``covered``   ``""``          JSON: the same, once every task of the keyed run committed
============  ==============  ================================================

``advance`` is written once every task of the run is ``done`` (the first by ``dbxdec
deploy``, run :data:`DEPLOY_RUN`); a file-arrival run's rows also hold its listing change
(``files``, ``gone``). A run given its keys moves no watermark but records what it
covered, so a catch-up does not run those keys again: each task stores its sources'
versions read before it ran, ``covered`` the smallest of each; a change at version ``v``
is covered for key ``K`` only by a ``covered`` row holding ``K`` at a version ``>= v``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from ...backfill.wire import BACKFILL_KEY_PARAM
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import TableUpdate
from ..storage.delta import delta_table_exists, read_delta
from ..storage.delta_history import latest_commit
from ..storage.table_name import TableName

if TYPE_CHECKING:
    from ..programs.run_kinds import TaskRunRequest

STATE_COLUMNS = "job STRING, run STRING, kind STRING, name STRING, value STRING"
"""The state table's columns, as SQL (``CREATE TABLE`` and ``createDataFrame``)."""
DEPLOY_RUN = "deploy"
READ = "read"
COVERED = "covered"
FileStamp = tuple[int, int]
"""A listed file's size in bytes and modification time (epoch microseconds)."""


def deploy_advance_value(versions: Mapping[str, int]) -> str:
    """The ``value`` of the first ``advance`` row (run :data:`DEPLOY_RUN`): the sources'
    versions at the job's first deploy, nothing pending."""
    return advance_value(versions, (), 1)


@dataclass(frozen=True, slots=True)
class StoredRun:
    """The keys a triggered run resolved, as stored."""

    keys: tuple[str, ...]
    written: tuple[str, ...]
    versions: dict[str, int]
    pending: tuple[str, ...]
    files: Mapping[str, FileStamp] = field(default_factory=dict)
    gone: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Advance:
    """The processed versions of a job's sources and its pending keys (latest advance)."""

    versions: dict[str, int]
    pending: tuple[str, ...]


def latest_advance_of(values: Iterable[str]) -> Advance | None:
    """The latest of the ``advance`` rows' ``values`` (``None`` when there is none)."""
    advances = [json.loads(v) for v in values]
    if not advances:
        return None
    # Each advance counts the ones before it (``seq``); watermarks only grow.
    latest = max(advances, key=lambda a: (a.get("seq", 0), sum(a["versions"].values())))
    versions = {k: int(v) for k, v in latest["versions"].items()}
    return Advance(versions, tuple(latest["pending"]))


def advance_value(
    versions: Mapping[str, int], pending: Sequence[str], seq: int, stored: StoredRun | None = None
) -> str:
    """The ``value`` of the ``seq``-th ``advance`` row (with a file-arrival run's
    listing change, from ``stored``)."""
    value = {"versions": dict(versions), "pending": list(pending), "seq": seq}
    value.update(_listing_change(stored) if stored is not None else {})
    return json.dumps(value, sort_keys=True)


def job_run_of(run_id: str) -> str:
    """The job run of a run id ``RUN-REPAIR`` (``{{job.run_id}}-{{job.repair_count}}``)."""
    head, _, tail = run_id.rpartition("-")
    return head if head.isdigit() and tail.isdigit() else run_id


class TriggerState:
    """The state table of one job, in the run's environment (catalog name or local folder)."""

    def __init__(self, environment: RunEnvironment, table: str, job: str) -> None:
        self.spark = environment.spark
        self.job = job
        self._cache: list[tuple[str, str, str, str]] | None = None
        self.table = TableName.parse(table).ref(environment)

    def _rows(self, kind: str, run: str | None = None) -> list[Any]:
        """The job's rows of ``kind`` (of ``run``); the table is read once per instance
        (a task reads it at its start) until :meth:`refresh`."""
        if self._cache is None:
            self._cache = self._read()
        return [r for r in self._cache if r[1] == kind and (run is None or r[0] == run)]

    def refresh(self) -> None:
        """Read the table again at the next question (other tasks may have written)."""
        self._cache = None

    def _read(self) -> list[Any]:
        if not delta_table_exists(self.spark, self.table):
            return []
        from pyspark.sql import functions as F

        frame = read_delta(self.spark, self.table).where(F.col("job") == self.job)
        return [
            (r[0], r[1], r[2], r[3]) for r in frame.select("run", "kind", "name", "value").collect()
        ]

    def append_rows(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """Append ``(job, run, kind, name, value)`` rows in one commit."""
        writer = self.spark.createDataFrame(list(rows), STATE_COLUMNS).write.format("delta")
        writer = writer.mode("append")
        if self.table.path is not None:
            writer.save(str(self.table.path))
        else:
            writer.saveAsTable(self.table.qualified)
        if self._cache is not None:
            self._cache.extend((r[1], r[2], r[3], r[4]) for r in rows)

    def rows_of(self, kind: str, run: str | None = None) -> list[tuple[str, str, str, str]]:
        """The job's ``(run, kind, name, value)`` rows of ``kind`` (of ``run``), read afresh."""
        self.refresh()
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in self._rows(kind, run)]

    def stored_run(self, run: str) -> StoredRun | None:
        """The keys run ``run`` resolved, or ``None`` (no task of it resolved them yet)."""
        rows = self._rows("keys", run)
        if not rows:
            return None
        data = json.loads(rows[0][3])  # concurrent first tasks store equal rows
        return StoredRun(
            tuple(data["keys"]),
            tuple(data["written"]),
            {k: int(v) for k, v in data["versions"].items()},
            tuple(data["pending"]),
            _stamps(data.get("files", {})),
            tuple(data.get("gone", ())),
        )

    def store_run(self, run: str, stored: StoredRun) -> None:
        value = {
            "keys": list(stored.keys),
            "written": list(stored.written),
            "versions": stored.versions,
            "pending": list(stored.pending),
            **_listing_change(stored),
        }
        self.append_rows([(self.job, run, "keys", "", json.dumps(value, sort_keys=True))])

    def latest_advance(self) -> Advance | None:
        """The watermarks and pending keys after the last completed run (or deploy)."""
        return latest_advance_of(r[3] for r in self._rows("advance"))

    def processed_listing(self) -> dict[str, FileStamp] | None:
        """The files the last processed file-arrival run saw (its advances' listing
        changes applied in order); ``None`` before the first processed run."""
        advances = [json.loads(r[3]) for r in self._rows("advance")]
        if not advances:
            return None
        listing: dict[str, FileStamp] = {}
        for advance in sorted(advances, key=lambda a: int(a.get("seq", 0))):
            listing.update(_stamps(advance.get("files", {})))
            for path in advance.get("gone", ()):
                listing.pop(path, None)
        return listing

    def advance(
        self,
        run: str,
        versions: Mapping[str, int],
        pending: Sequence[str],
        stored: StoredRun | None = None,
        *,
        done: str | None = None,
    ) -> None:
        """Append the run's next ``advance`` row (after a ``done`` row of task ``done``)."""
        value = advance_value(versions, pending, len(self._rows("advance")) + 1, stored)
        rows = [] if done is None else [(self.job, run, "done", done, "")]
        self.append_rows([*rows, (self.job, run, "advance", "", value)])

    def finish(self, run: str, task: str, tasks: set[str], stored: StoredRun) -> None:
        """Record that ``task`` committed in ``run``; once every task of ``tasks`` is
        done, advance the watermarks to ``stored``'s versions (in the same commit when
        this instance knows every other task done; else after reading the table again)."""
        known = {str(r[2]) for r in self._rows("done", run)} | {task}
        if tasks <= known and not self.run_advanced(run):
            self.advance(run, stored.versions, stored.pending, stored, done=task)
            return
        self.append_rows([(self.job, run, "done", task, "")])
        if tasks <= self.done_tasks(run) and not self.run_advanced(run):
            self.advance(run, stored.versions, stored.pending, stored)

    def done_tasks(self, run: str) -> set[str]:
        """Every task done in ``run``, read afresh (tasks beside this one may have ended)."""
        self.refresh()
        return {str(r[2]) for r in self._rows("done", run)}

    def run_advanced(self, run: str) -> bool:
        return bool(self._rows("advance", run))


def _listing_change(stored: StoredRun) -> dict[str, Any]:
    """The ``files``/``gone`` fields of a stored run (none for a table-triggered run)."""
    change: dict[str, Any] = {}
    if stored.files:
        change["files"] = {p: list(stamp) for p, stamp in stored.files.items()}
    if stored.gone:
        change["gone"] = list(stored.gone)
    return change


def _stamps(data: Mapping[str, Any]) -> dict[str, FileStamp]:
    return {str(p): (int(v[0]), int(v[1])) for p, v in data.items()}


def covered_value(keys: Sequence[str], versions: Mapping[str, int]) -> str:
    """The ``value`` of a ``read`` or ``covered`` row."""
    return json.dumps({"keys": list(keys), "versions": dict(versions)}, sort_keys=True)


def coverage_recorder(
    request: TaskRunRequest, environment: RunEnvironment
) -> Callable[[], None] | None:
    """What a keyed task run of a table-triggered job records once it has committed
    (``read``, then ``covered``), its sources' versions read now, before the task runs;
    ``None`` for a run no coverage is recorded for."""
    trigger = request.job.trigger
    keys = request.keys
    if (
        request.kind is None
        or request.kind.name != "task"
        or not isinstance(trigger, TableUpdate)
        or not request.params.get(BACKFILL_KEY_PARAM)
        or keys is None
        or not environment.run_id
    ):
        return None
    versions = {s.name: _latest_version(environment, s.name) for s in trigger.sources}
    state = TriggerState(environment, trigger.state_table, request.job.name)
    return partial(_record, state, job_run_of(environment.run_id), request, keys.written, versions)


def _record(
    state: TriggerState,
    run: str,
    request: TaskRunRequest,
    written: Sequence[str],
    versions: Mapping[str, int],
) -> None:
    job = request.job
    tasks = set(job.graph.topological_order())
    value = covered_value(written, versions)
    read_row = (job.name, run, READ, request.task_key, value)
    reads = {str(r[2]): json.loads(r[3]) for r in state.rows_of(READ, run)}
    reads[request.task_key] = json.loads(value)
    if not tasks <= set(reads) or state.rows_of(COVERED, run):
        state.append_rows([read_row])
        return
    lowest: dict[str, int] = {}
    for read in reads.values():
        for name, version in read["versions"].items():
            lowest[name] = min(int(version), lowest.get(name, int(version)))
    state.append_rows([read_row, (job.name, run, COVERED, "", covered_value(written, lowest))])


def _latest_version(environment: RunEnvironment, name: str) -> int:
    ref = TableName.parse(name).ref(environment)
    return int(latest_commit(environment.spark, ref)["version"])
