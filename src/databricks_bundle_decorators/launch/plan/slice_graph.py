"""The graph of slices of a ``--downstream`` backfill: one slice per (job, key).

``dbxdec backfill A --downstream`` runs A's keys and every key of a job that reads
(transitively) what those keys write: the table graph
(:mod:`...bundle.table_graph`) says which jobs read which, the key mapping of each edge
(:mod:`...backfill.mapping`) which of their keys. A slice waits for every planned
slice of an upstream job whose key it reads (keys that are not planned are not
rewritten, so there is nothing to wait for).

Slices are laid out job by job, upstream jobs first (a topological order of the
jobs), each job's keys in the user's ``--order``; so a slice only ever waits for
slices with a smaller index. Pure data: nothing here runs or reads a table.

Example: A (daily) -> B (daily, lookback 1) -> C (monthly) over
2024-01-30..2024-02-02 plans A's four days, B's four days (B's 2024-01-31 waits for
A's 2024-01-30 and 2024-01-31) and C's January and February (January waits for B's
2024-01-30 and 2024-01-31).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ...backfill.base import BackfillDef
from ...backfill.mapping import downstream_keys, upstream_keys
from ...bundle.table_graph import TableEdge, TableGraph
from ...errors import UsageError
from .plan import ORDERS, Order


@dataclass(frozen=True, slots=True)
class JobSlice:
    """One run of a ``--downstream`` backfill: one key of one job.

    Attributes:
        index: Position in the plan (0-based).
        job: The job the run is a run of.
        key: The key it writes.
        waits_for: Indices of the slices that must succeed before it starts.
    """

    index: int
    job: str
    key: str
    waits_for: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """``b 2024-01-31``."""
        return f"{self.job} {self.key}"


@dataclass(frozen=True, slots=True)
class SliceGraph:
    """The slices of a ``--downstream`` backfill and the table-graph edges that made them.

    Attributes:
        root: The job the user named.
        slices: Every slice, upstream jobs first (see the module docstring).
        edges: The table-graph edges between planned jobs, in the graph's order.
    """

    root: str
    slices: tuple[JobSlice, ...]
    edges: tuple[TableEdge, ...]

    @property
    def jobs(self) -> list[str]:
        """The jobs with slices, upstream first."""
        return list(dict.fromkeys(s.job for s in self.slices))

    def keys_of(self, job: str) -> list[str]:
        """``job``'s planned keys, in plan order."""
        return [s.key for s in self.slices if s.job == job]


def build_slice_graph(
    graph: TableGraph,
    definitions: Mapping[str, BackfillDef | None],
    root: str,
    keys: Sequence[str],
    *,
    order: Order = "forward",
    now: datetime | None = None,
) -> SliceGraph:
    """Plan ``root``'s ``keys`` and every dependant key they map to, transitively.

    Args:
        graph: The bundle's table graph (acyclic: :func:`build_table_graph` refuses cycles).
        definitions: Each job's backfill definition.
        root: The job whose keys are given.
        keys: ``root``'s keys, valid keys of its definition.
        order: Each job's keys ``forward`` (oldest first) or ``reverse``.
        now: Bounds an open ``end_date`` of a job every key of which is read.

    Raises:
        UsageError: a dependant has no backfill definition (it has no key to run).
    """
    if order not in ORDERS:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    jobs = _downstream_jobs(graph, root)
    planned: dict[str, list[str]] = {root: list(keys)}
    used: list[TableEdge] = []
    for job in jobs[1:]:
        definition = definitions[job]
        incoming = [e for e in graph.upstreams(job) if planned.get(e.upstream)]
        if definition is None:
            raise UsageError(
                f"--downstream: job {job!r} reads {incoming[0].table} (written by "
                f"{incoming[0].upstream!r}) but has no backfill definition, so it has no key "
                "to rerun: give it one, or backfill without --downstream"
            )
        found: set[str] = set()
        for edge in incoming:
            found.update(downstream_keys(edge.keys, planned[edge.upstream], now=now))
        planned[job] = definition.sort_keys(list(found))
    used = [e for e in graph.edges if planned.get(e.upstream) and planned.get(e.downstream)]
    slices: list[JobSlice] = []
    index: dict[tuple[str, str], int] = {}
    for job in jobs:
        ordered = planned[job] if order == "forward" else planned[job][::-1]
        for key in ordered:
            waits = _waits_for(job, key, used, index, now)
            index[(job, key)] = len(slices)
            slices.append(JobSlice(len(slices), job, key, waits))
    return SliceGraph(root, tuple(slices), tuple(used))


def _waits_for(
    job: str,
    key: str,
    edges: Sequence[TableEdge],
    index: Mapping[tuple[str, str], int],
    now: datetime | None,
) -> tuple[int, ...]:
    found: set[int] = set()
    for edge in edges:
        if edge.downstream != job:
            continue
        for upstream in upstream_keys(edge.keys, key, now=now):
            position = index.get((edge.upstream, upstream))
            if position is not None:
                found.add(position)
    return tuple(sorted(found))


def _downstream_jobs(graph: TableGraph, root: str) -> list[str]:
    """``root`` and every job reading (transitively) what it writes, in a topological
    order (a job after every job it reads), ties in the graph's job order."""
    reached = {root}
    frontier = [root]
    while frontier:
        job = frontier.pop()
        for edge in graph.dependants(job):
            if edge.downstream not in reached:
                reached.add(edge.downstream)
                frontier.append(edge.downstream)
    ordered: list[str] = []
    while len(ordered) < len(reached):
        for job in graph.jobs:
            if job in reached and job not in ordered:
                waiting = {e.upstream for e in graph.upstreams(job)} & reached
                if waiting <= set(ordered):
                    ordered.append(job)
                    break
        else:  # pragma: no cover - build_table_graph refuses cycles
            raise UsageError(f"--downstream: the jobs below {root!r} read each other in a cycle")
    return ordered


def blocked_by(waits_for: Mapping[int, Collection[int]], failed: Collection[int]) -> dict[int, int]:
    """The slices that can no longer run because a slice they wait for (directly or
    through other slices) failed: each mapped to one failed slice that blocks it.

    ``waits_for`` maps each slice to the slices it waits for, every one with a smaller
    index (the plan's layout). A failed slice is not itself blocked.

    Example:
        >>> blocked_by({0: [], 1: [0], 2: [1], 3: []}, failed={0})
        {1: 0, 2: 0}
    """
    blocked: dict[int, int] = {}
    failures = set(failed)
    for index in sorted(waits_for):
        if index in failures:
            continue
        for upstream in sorted(waits_for[index]):
            if upstream in failures:
                blocked[index] = upstream
                break
            if upstream in blocked:
                blocked[index] = blocked[upstream]
                break
    return blocked
