"""The slices of a ``--downstream`` backfill: one per (job, key), for A's keys and every
key of a job reading (transitively) what they write (:mod:`...bundle.table_graph`,
mapped by :mod:`...backfill.mapping`). A slice waits for each planned slice of an
upstream job whose key it reads. Jobs are laid out upstream first, each job's keys in
``--order``, so a slice waits only for smaller indices.

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
    """One run of a ``--downstream`` backfill: one key of one job, at ``index``, waiting for
    the slices ``waits_for`` to succeed.
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
    """The slices of a ``--downstream`` backfill from the ``root`` job, upstream first, and
    the table-graph edges between planned jobs.
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
    """Plan ``root``'s ``keys`` and every dependant key they map to, transitively (``now``
    bounds an open ``end_date`` of a job whose every key is read).

    Raises:
        UsageError: a dependant has no backfill definition (it has no key to run).
    """
    return build_slice_graph_from(graph, definitions, {root: keys}, order=order, now=now)


def build_slice_graph_from(
    graph: TableGraph,
    definitions: Mapping[str, BackfillDef | None],
    roots: Mapping[str, Sequence[str]],
    *,
    order: Order = "forward",
    now: datetime | None = None,
) -> SliceGraph:
    """:func:`build_slice_graph` from several roots: each job of ``roots`` with its keys
    (``dbxdec restate``: the keys that read a source's versions may be in several jobs).
    A root job that also reads another root's tables runs its own keys and those it maps
    to, in its definition's order; the graph's :attr:`SliceGraph.root` is the first root,
    upstream first. One root is :func:`build_slice_graph` exactly.

    Raises:
        UsageError: no root; a dependant has no backfill definition.
    """
    if order not in ORDERS:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    if not roots:
        raise UsageError("nothing to plan: no job and keys to start from")
    jobs = _downstream_jobs(graph, list(roots))
    planned: dict[str, list[str]] = {}
    for job in jobs:
        definition = definitions.get(job)
        incoming = [e for e in graph.upstreams(job) if planned.get(e.upstream)]
        if not incoming:
            planned[job] = list(roots.get(job, ()))  # a root nothing planned feeds: as given
            continue
        if definition is None:
            raise UsageError(
                f"--downstream: job {job!r} reads {incoming[0].table} (written by "
                f"{incoming[0].upstream!r}) but has no backfill definition, so it has no key "
                "to rerun: give it one, or backfill without --downstream"
            )
        found: set[str] = set(roots.get(job, ()))
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
    first = next(job for job in jobs if job in roots)
    return SliceGraph(first, tuple(slices), tuple(used))


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


def _downstream_jobs(graph: TableGraph, roots: Sequence[str]) -> list[str]:
    """The ``roots`` and their transitive readers, each after the jobs it reads."""
    reached = set(roots)
    frontier = list(roots)
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
            raise UsageError(
                f"--downstream: the jobs below {roots[0]!r} read each other in a cycle"
            )
    return ordered


def blocked_by(waits_for: Mapping[int, Collection[int]], failed: Collection[int]) -> dict[int, int]:
    """The slices that can no longer run because a slice they wait for (directly or not)
    failed, each mapped to one such failed slice (``waits_for``: smaller indices only).

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
