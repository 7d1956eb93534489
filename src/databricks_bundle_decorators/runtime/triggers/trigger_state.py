"""The trigger state table: each triggered run's keys, its tasks' commits, the watermarks.

One small Delta table (``TableUpdate(state_table=...)``) that every task of a run reads,
so a run's keys are resolved once and every task and every repair of the run processes
the same ones. It is append-only: appends do not conflict with each other ("Isolation
levels and write conflicts", https://docs.databricks.com/aws/en/optimizations/isolation-level;
the table's creation, a metadata change, is the one write two first tasks could race on).
Each row is one fact:

============  ==============  ================================================
kind          name            value
============  ==============  ================================================
``keys``      ``""``          JSON: the run's keys, written keys, versions, pending
``done``      task key        ``""``: the task committed its write in this run
``advance``   ``""``          JSON: processed versions per source and pending keys
============  ==============  ================================================

Runs given their keys add ``read`` and ``covered`` rows (:mod:`.trigger_coverage`).

A file-arrival run (``FileArrival(keys=...)``) stores in its ``keys`` row, and then in
its ``advance`` row, the files it found new or changed (``files``: path -> size and
modification time) and those gone since (``gone``): each ``advance`` holds only the
change, so the listing the last processed run saw is the advances applied in order
(:meth:`TriggerState.processed_listing`), and the table grows with the files that
arrive, not with the runs times the files present.

The run is ``{{job.run_id}}`` (without the repair count): a repair of the run reads the
``keys`` row its first attempt wrote. The ``advance`` row is written once every task of
the run has a ``done`` row: the processed-version watermark moves only after the last
task committed. The first watermark is the ``advance`` row of run :data:`DEPLOY_RUN` that
``dbxdec deploy`` writes through a SQL warehouse (:func:`deploy_advance_value`; see
``launch/workspace/first_watermark.py``); ``--from-version`` overrides it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...definitions.contracts import RunEnvironment
from ..storage.delta import delta_table_exists
from ..storage.formats import TableRef
from ..storage.table_name import TableName

_COLUMNS = "job STRING, run STRING, kind STRING, name STRING, value STRING"
STATE_COLUMNS = _COLUMNS
"""The state table's columns, as SQL (``CREATE TABLE`` and ``createDataFrame``)."""
DEPLOY_RUN = "deploy"
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


def table_ref(name: str, environment: RunEnvironment) -> TableRef:
    """The table ``name`` in the run's environment (catalog name or local folder)."""
    table = TableName.parse(name)
    path = None if environment.databricks else table.local_path(environment.warehouse)
    return TableRef(str(table), table.quoted, path)


class TriggerState:
    """The state table of one job, in the run's environment (catalog name or local folder)."""

    def __init__(self, environment: RunEnvironment, table: str, job: str) -> None:
        self.spark = environment.spark
        self.job = job
        self._cache: list[tuple[str, str, str, str]] | None = None
        self.table = table_ref(table, environment)

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

        reader = self.spark.read.format("delta")
        frame = (
            reader.load(str(self.table.path))
            if self.table.path is not None
            else reader.table(self.table.qualified)
        )
        frame = frame.where(F.col("job") == self.job)
        return [
            (r[0], r[1], r[2], r[3]) for r in frame.select("run", "kind", "name", "value").collect()
        ]

    def append_rows(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """Append ``(job, run, kind, name, value)`` rows in one commit."""
        writer = self.spark.createDataFrame(list(rows), _COLUMNS).write.format("delta")
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
    ) -> None:
        self.append_rows([self._advance_row(run, versions, pending, stored)])

    def _advance_row(
        self,
        run: str,
        versions: Mapping[str, int],
        pending: Sequence[str],
        stored: StoredRun | None = None,
    ) -> tuple[str, str, str, str, str]:
        value = advance_value(versions, pending, len(self._rows("advance")) + 1, stored)
        return (self.job, run, "advance", "", value)

    def finish(self, run: str, task: str, tasks: set[str], stored: StoredRun) -> None:
        """Record that ``task`` committed in ``run``; once every task of ``tasks`` is
        done, advance the watermarks to ``stored``'s versions.

        When this instance already knows every other task done, the ``done`` and
        ``advance`` rows go in one commit (a commit is the costly part of a small
        write); otherwise the table is read again after the ``done`` row, since tasks
        running beside this one may have finished meanwhile.
        """
        done_row = (self.job, run, "done", task, "")
        known = {str(r[2]) for r in self._rows("done", run)} | {task}
        if tasks <= known and not self.run_advanced(run):
            row = self._advance_row(run, stored.versions, stored.pending, stored)
            self.append_rows([done_row, row])
            return
        self.append_rows([done_row])
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
