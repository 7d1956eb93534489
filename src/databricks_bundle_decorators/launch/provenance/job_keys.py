"""One job's keys as their local tables' provenance tells them: what wrote each key (the
provenance record of its last commit, per table the job writes) and which keys are stale,
with the reasons (:mod:`.stale`). What ``dbxdec status JOB --local`` and the app's job
page show beside the key states; reading the index is cheap (JSON files, no JVM).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backfill.wire.provenance import Provenance
from ...definitions import JobDefinition
from ..ledger.place import LocalPlace
from .index import PROVENANCE_FOLDER
from .stale import StaleJudge, StaleKey


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What last wrote one key of one table: the task, and its commit's provenance
    (``None``: a commit without one, which nothing vouches for)."""

    table: str
    task: str
    provenance: Provenance | None

    def to_json(self) -> dict[str, Any]:
        record = self.provenance.key_json() if self.provenance is not None else None
        return {"table": self.table, "task": self.task, "provenance": record}


@dataclass(frozen=True, slots=True)
class JobProvenance:
    """The provenance of a job's written keys (``records``, per table it writes) and its
    stale keys (``stale``, each with a :class:`~.stale.StaleKey` per table it is stale in);
    ``tables``: the local tables the job writes."""

    job: str
    tables: tuple[str, ...] = ()
    records: Mapping[str, tuple[KeyRecord, ...]] = field(default_factory=dict)
    stale: Mapping[str, tuple[StaleKey, ...]] = field(default_factory=dict)

    def reasons(self, key: str) -> tuple[str, ...]:
        """Why ``key`` is stale (empty: it is not); each reason names its table when the
        job writes more than one."""
        found = self.stale.get(key, ())
        if len(self.tables) > 1:
            return tuple(f"{s.table}: {reason}" for s in found for reason in s.reasons)
        return tuple(reason for s in found for reason in s.reasons)

    def stale_json(self, keys: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The stale keys (of ``keys``, in their order; else all), one item per key and
        table, each with its reasons and its provenance record."""
        chosen = self.stale if keys is None else [k for k in keys if k in self.stale]
        return [s.to_json() for key in chosen for s in self.stale[key]]


def job_provenance(
    job: str, jobs: Sequence[JobDefinition], warehouse: Path, root: Path
) -> JobProvenance:
    """Job ``job``'s keys in the local tables under ``warehouse``, judged with every job
    of ``jobs`` (a key is stale through the tables upstream of it), the index kept under
    ``root``'s :data:`PROVENANCE_FOLDER`.

    Raises:
        DbxdecError: the jobs' table graph is wrong (as ``dbxdec graph`` says).
    """
    judge = StaleJudge(jobs, warehouse, LocalPlace(root / PROVENANCE_FOLDER))
    report = judge.judge()
    stale: dict[str, list[StaleKey]] = {}
    for found in report.keys:
        if found.job == job:
            stale.setdefault(found.key, []).append(found)
    records: dict[str, list[KeyRecord]] = {}
    tables: list[str] = []
    for writer in judge.writers:
        if writer.job.name != job:
            continue
        index = judge.index(writer.table)
        if index is None:
            continue
        tables.append(writer.table)
        for key, record in index.written():
            records.setdefault(key, []).append(KeyRecord(writer.table, writer.task, record))
    return JobProvenance(
        job,
        tuple(tables),
        {key: tuple(found) for key, found in records.items()},
        {key: tuple(found) for key, found in stale.items()},
    )
