"""The bundle-wide table graph: a job writes its IoManagers' ``tables`` and reads its
``sources``; an edge runs from a writer to every other job reading the table, with the
key mapping between them (:class:`..backfill.mapping.KeyEdge`). Cycles are refused."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..backfill.mapping import KeyEdge
from ..definitions import JobDefinition
from ..errors import DefinitionError

JSON_VERSION = 1  # of TableGraph.to_json's schema (docs/guides/graph.md)


def table_key(name: str) -> str:
    """A table name as compared: Unity Catalog stores names in lowercase
    (https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-names)."""
    return name.lower()


@dataclass(frozen=True, slots=True)
class TableEdge:
    """Job ``downstream`` reads ``table`` (as the writer names it), which job
    ``upstream`` writes; ``keys`` maps the writer's keys to the reader's."""

    upstream: str
    downstream: str
    table: str
    keys: KeyEdge


@dataclass(frozen=True, slots=True)
class TableGraph:
    """Jobs (in the order given), the tables each writes and reads, and one edge per
    (writer, reader, table), in job order."""

    jobs: tuple[str, ...]
    writes: Mapping[str, tuple[str, ...]]
    reads: Mapping[str, tuple[str, ...]]
    edges: tuple[TableEdge, ...]

    def tables(self) -> list[str]:
        """Every table written or read, once each (first spelling seen), sorted."""
        found: dict[str, str] = {}
        for job in self.jobs:
            for name in (*self.writes[job], *self.reads[job]):
                found.setdefault(table_key(name), name)
        return sorted(found.values(), key=table_key)

    def writers(self, table: str) -> list[str]:
        return [j for j in self.jobs if _holds(self.writes[j], table)]

    def readers(self, table: str) -> list[str]:
        return [j for j in self.jobs if _holds(self.reads[j], table)]

    def dependants(self, job: str) -> list[TableEdge]:
        return [e for e in self.edges if e.upstream == job]

    def upstreams(self, job: str) -> list[TableEdge]:
        return [e for e in self.edges if e.downstream == job]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "jobs": [
                {"name": j, "writes": list(self.writes[j]), "reads": list(self.reads[j])}
                for j in self.jobs
            ],
            "tables": [
                {"name": t, "writers": self.writers(t), "readers": self.readers(t)}
                for t in self.tables()
            ],
            "edges": [_edge_json(e) for e in self.edges],
        }


def _holds(names: Iterable[str], table: str) -> bool:
    return any(table_key(n) == table_key(table) for n in names)


def _edge_json(edge: TableEdge) -> dict[str, Any]:
    keys = edge.keys
    return {
        "upstream": edge.upstream,
        "downstream": edge.downstream,
        "table": edge.table,
        "mapping": keys.mapping,
        "upstream_kind": _kind_json(keys.upstream),
        "downstream_kind": _kind_json(keys.downstream),
        "lookback": keys.lookback,
        "per_static_value": keys.per_static_value,
        "description": keys.describe(),
    }


def _kind_json(definition: object) -> str | None:
    kind = getattr(definition, "kind", None)
    return kind if isinstance(kind, str) else None


def job_writes(job: JobDefinition) -> tuple[str, ...]:
    """The tables ``job``'s tasks write through their IoManagers (traces its body)."""
    found: dict[str, str] = {}
    for node in job.graph:
        manager = node.definition.io_manager
        for name in manager.tables if manager is not None else ():
            found.setdefault(table_key(name), name)
    return tuple(found.values())


def build_table_graph(jobs: Iterable[JobDefinition]) -> TableGraph:
    """The table graph of ``jobs`` (traces every job's body).

    Raises:
        DefinitionError: jobs read each other's tables in a cycle (named).
    """
    definitions = list(jobs)
    writes = {job.name: job_writes(job) for job in definitions}
    reads = {job.name: tuple(s.name for s in job.sources) for job in definitions}
    edges: list[TableEdge] = []
    for writer in definitions:
        written = {table_key(t): t for t in writes[writer.name]}
        for reader in definitions:
            if reader.name == writer.name:
                continue
            for declared in reader.sources:
                table = written.get(table_key(declared.name))
                if table is None:
                    continue
                keys = KeyEdge(writer.backfill, reader.backfill, declared.event_time is not None)
                edges.append(TableEdge(writer.name, reader.name, table, keys))
    graph = TableGraph(tuple(writes), writes, reads, tuple(edges))
    cycle = find_cycle(graph)
    if cycle is not None:
        path = " -> ".join([cycle[0].upstream, *(e.downstream for e in cycle)])
        tables = ", ".join(dict.fromkeys(e.table for e in cycle))
        raise DefinitionError(
            f"jobs read each other's tables in a cycle: {path} (through {tables}); no order "
            "runs each job after the jobs it reads: drop one of these sources, or read another "
            "table"
        )
    return graph


def find_cycle(graph: TableGraph) -> list[TableEdge] | None:
    """The edges of one cycle between jobs, in order, or ``None`` when there is none."""
    out: dict[str, list[TableEdge]] = {job: [] for job in graph.jobs}
    for edge in graph.edges:
        out[edge.upstream].append(edge)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for start in graph.jobs:
        if state.get(start):
            continue
        path: list[TableEdge] = []
        stack = [(start, iter(out[start]))]
        state[start] = 1
        while stack:
            job, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                state[job] = 2
                stack.pop()
                if path:
                    path.pop()
                continue
            if state.get(step.downstream) == 1:
                first = next(
                    (i for i, e in enumerate(path) if e.upstream == step.downstream), len(path)
                )
                return [*path[first:], step]
            if not state.get(step.downstream):
                state[step.downstream] = 1
                path.append(step)
                stack.append((step.downstream, iter(out[step.downstream])))
    return None


def render_text(graph: TableGraph) -> list[str]:
    """The graph as lines: jobs, tables with their writers and readers, edges."""
    lines = [f"jobs ({len(graph.jobs)}):"]
    lines += [f"  {job}" for job in graph.jobs]
    tables = graph.tables()
    lines.append(f"tables ({len(tables)}):")
    for table in tables:
        writers = ", ".join(graph.writers(table)) or "-"
        readers = ", ".join(graph.readers(table)) or "-"
        lines.append(f"  {table}  written by {writers}; read by {readers}")
    lines.append(f"edges ({len(graph.edges)}):")
    for edge in graph.edges:
        lines.append(
            f"  {edge.upstream} -> {edge.downstream}  via {edge.table}: {edge.keys.describe()}"
        )
    return lines
