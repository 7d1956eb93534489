"""What ``dbxdec restate`` recomputes, and why: its roots (the keys asked for) and every
key of every job that reads them, transitively, as one ``--downstream`` slice graph
(:func:`..plan.slice_graph.build_slice_graph_from`), each key with the reasons it is in.

The roots are either a range of a table's keys (its writer job's keys from ``start`` to
``end``), or every key of the project's local tables whose provenance record
(:meth:`.index.TableIndex.record`) says it read a table at one of a range of versions
(a source commit found wrong, or late). Nothing here launches: the slice graph goes to
the launcher's ``--downstream`` path, so a restatement is one backfill (one ledger, one
claim per job, ``--resume`` and ``undo`` as any other).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...backfill.mapping import upstream_keys
from ...bundle.table_graph import TableGraph, build_table_graph, table_key
from ...definitions import JobDefinition
from ...errors import DefinitionError, UsageError, did_you_mean
from ...runtime.io.spark_table import TableName
from ..ledger.place import Place
from ..plan.request import BackfillRequest
from ..plan.slice_graph import SliceGraph, build_slice_graph_from
from .index import WHOLE_TABLE, read_index
from .stale import writers_in_order

Reasons = dict[tuple[str, str], list[str]]
"""``(job, key)``: why the key is restated, in words."""

_VERSIONS = re.compile(r"^\s*(\d+)\s*(?:(?:-|\.\.)\s*(\d+)\s*)?$")


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of Delta versions of one table."""

    first: int
    last: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """``41``, ``41-43`` (or ``41..43``).

        Raises:
            UsageError: anything else, or a range that ends before it starts.
        """
        match = _VERSIONS.match(text)
        if match is None:
            raise UsageError(
                f"--versions takes a version or an inclusive range of versions, e.g. 41 or "
                f"41-43; got {text!r}"
            )
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise UsageError(f"--versions {text}: the range ends before it starts")
        return cls(first, last)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.first <= version <= self.last

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}..{self.last}"

    def label(self) -> str:
        """``version 41``, ``versions 41..43``."""
        return f"version {self}" if self.first == self.last else f"versions {self}"


@dataclass
class Roots:
    """The keys a restatement starts from, per job (each job's keys in its order), with
    each key's reasons; ``what`` says what was asked, for the messages."""

    what: str
    keys: dict[str, list[str]] = field(default_factory=dict)
    reasons: Reasons = field(default_factory=dict)

    def add(self, job: str, key: str, reason: str) -> None:
        said = self.reasons.setdefault((job, key), [])
        if not said:
            self.keys.setdefault(job, []).append(key)
        if reason not in said:
            said.append(reason)


@dataclass(frozen=True, slots=True)
class RestatePlan:
    """The restatement's slice graph (roots and dependants, upstream first) and why each
    of its keys is in it."""

    what: str
    graph: SliceGraph
    reasons: Mapping[tuple[str, str], Sequence[str]]

    def keys_by_job(self) -> dict[str, list[str]]:
        """Each job's keys, upstream jobs first, each job's keys in plan order."""
        found: dict[str, list[str]] = {}
        for s in self.graph.slices:
            found.setdefault(s.job, []).append(s.key)
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "restate": self.what,
            "jobs": {
                job: [{"key": k, "reasons": list(self.reasons.get((job, k), ()))} for k in keys]
                for job, keys in self.keys_by_job().items()
            },
        }


def _graph(jobs: Sequence[JobDefinition]) -> TableGraph:
    try:
        return build_table_graph(jobs)
    except DefinitionError as exc:
        raise UsageError(f"restate: {exc}") from None


def table_roots(
    jobs: Sequence[JobDefinition], target: str, *, start: str | None, end: str | None
) -> Roots:
    """The keys from ``start`` to ``end`` (inclusive; either may be open) of the job that
    writes table ``target``, or of job ``target``.

    Raises:
        UsageError: ``target`` names no job and no table a job writes; no range; bad keys.
    """
    if start is None and end is None:
        raise UsageError("restate TABLE needs a range: --start KEY and/or --end KEY")
    by_name = {job.name: job for job in jobs}
    graph = _graph(jobs)
    if target in by_name:
        job, where = by_name[target], f"job {target}"
    else:
        writers = graph.writers(target)
        if not writers:
            written = sorted({t for j in graph.jobs for t in graph.writes[j]})
            read_only = table_key(target) in {table_key(t) for t in graph.tables()}
            hint = (
                " It is a source (no job writes it): restate what read it with --source."
                if read_only
                else did_you_mean(target, [*by_name, *written])
            )
            raise UsageError(
                f"{target!r} is neither a job nor a table a job of the project writes.{hint}"
            )
        job, where = by_name[writers[0]], target
    plan = BackfillRequest(job.name, start=start, end=end).plan(job)
    roots = Roots(f"{start or 'first'}..{end or 'last'} of {where}")
    reason = f"in {start or '(first)'}..{end or '(last)'} of {where}"
    for s in plan.slices:
        for key in s.keys:
            roots.add(job.name, key, reason)
    return roots


def source_roots(
    jobs: Sequence[JobDefinition],
    warehouse: Path,
    place: Place,
    source: str,
    versions: Versions,
) -> Roots:
    """Every key of the project's local tables whose provenance says it read ``source`` at
    a version in ``versions`` (empty :attr:`Roots.keys`: none did).

    Raises:
        UsageError: ``source`` is no table of the project; a key to restate is of a job
            without a backfill definition (it has no key to run).
    """
    graph = _graph(jobs)
    if table_key(source) not in {table_key(t) for t in graph.tables()}:
        raise UsageError(
            f"{source!r} is no table of the project (read or written by a job)."
            f"{did_you_mean(source, graph.tables())}"
        )
    roots = Roots(f"what read {source} at {versions.label()}")
    wanted = table_key(source)
    for writer in writers_in_order(jobs):
        folder = TableName.parse(table_key(writer.table)).local_path(warehouse)
        if not folder.is_dir():
            continue
        index = read_index(place, table_key(writer.table), folder)
        found: list[tuple[str, int]] = []
        for key, record in index.written():
            if record is None:
                continue
            read = {table_key(t): v for t, v in record.reads.items()}.get(wanted)
            if read in versions:
                found.append((key, int(read)))  # type: ignore[arg-type]
        if not found:
            continue
        backfill = writer.job.backfill
        if backfill is None or any(key == WHOLE_TABLE for key, _ in found):
            raise UsageError(
                f"job {writer.job.name!r} read {source} at {versions.label()} but has no "
                f"backfill keys to rerun ({writer.table} is written whole): run it with "
                f"dbxdec run {writer.job.name}"
            )
        for key, version in found:
            roots.add(writer.job.name, key, f"read {source} at version {version}")
    for job, keys in roots.keys.items():
        definition = next(j for j in jobs if j.name == job).backfill
        assert definition is not None
        roots.keys[job] = definition.sort_keys(keys)
    return roots


def plan_restate(
    jobs: Sequence[JobDefinition], roots: Roots, *, now: datetime | None = None
) -> RestatePlan:
    """The roots and every key reading them, transitively, in every job of the project,
    each dependant key with the restated keys it reads as its reasons.

    Raises:
        UsageError: no roots; a dependant without a backfill definition; a cycle.
    """
    graph = _graph(jobs)
    definitions = {job.name: job.backfill for job in jobs}
    try:
        slices = build_slice_graph_from(graph, definitions, roots.keys, now=now)
    except ValueError as exc:  # a key no longer of its job's backfill definition
        raise UsageError(f"restate: {exc}") from None
    reasons: Reasons = {k: list(v) for k, v in roots.reasons.items()}
    planned = {(s.job, s.key) for s in slices.slices}
    for s in slices.slices:
        for edge in slices.edges:
            if edge.downstream != s.job:
                continue
            read = [
                k for k in upstream_keys(edge.keys, s.key, now=now) if (edge.upstream, k) in planned
            ]
            if read:
                said = reasons.setdefault((s.job, s.key), [])
                said.append(f"reads {edge.table} {', '.join(read)} (restated)")
    return RestatePlan(roots.what, slices, reasons)
