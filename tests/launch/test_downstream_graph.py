"""The slice graph of ``--downstream`` and its scheduler, without Spark.

The plan of issue 30's chain (which keys, which waits), and a hypothesis property of
:class:`Scheduler` with a :class:`ReadySet` on random slice graphs: a slice is launched only after
every slice it waits for has succeeded (as the scheduler saw it, by polling), and the
blocked slices are exactly the transitive dependants of the failed ones. Runs happen
on :class:`InstantBackend`, a :class:`Backend` whose runs end as they start.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, Registry, source, task
from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.bundle.table_graph import build_table_graph
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.launch.backends.backends import (
    RunStatus,
    SubmitRequest,
    Submitted,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.slice_graph import blocked_by, build_slice_graph
from databricks_bundle_decorators.launch.run.blocking import ReadySet
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.launch.run.summary import summarize

A_OUT, B_OUT, C_OUT = "main.chain.a_out", "main.chain.b_out", "main.chain.c_out"


def _job(registry: Registry, name: str, table: str, reads: list[str], backfill: object) -> None:
    def body() -> None:
        @task(io_manager=SparkTableIoManager(table, partition_column="day"))
        def produce() -> None: ...

        produce()

    body.__name__ = name
    sources = [source(t, event_time="day") for t in reads]
    registry.job(name=name, backfill=backfill, sources=sources)(body)


def chain() -> Registry:
    registry = Registry()
    _job(registry, "a", A_OUT, [], DailyBackfill("2024-01-01", "2024-03-31"))
    _job(registry, "b", B_OUT, [A_OUT], DailyBackfill("2024-01-01", "2024-03-31", lookback=1))
    _job(registry, "c", C_OUT, [B_OUT], MonthlyBackfill("2024-01-01", "2024-03-01"))
    return registry


FOUR_DAYS = ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]


def test_the_chain_plans_each_dependant_key_with_the_keys_it_waits_for() -> None:
    registry = chain()
    graph = build_table_graph(registry)
    definitions = {job.name: job.backfill for job in registry}
    plan = build_slice_graph(graph, definitions, "a", FOUR_DAYS)
    by_label = {s.label: s for s in plan.slices}
    waits = {s.label: [plan.slices[w].label for w in s.waits_for] for s in plan.slices}
    assert plan.jobs == ["a", "b", "c"]
    assert plan.keys_of("b") == [*FOUR_DAYS, "2024-02-03"]
    assert plan.keys_of("c") == ["2024-01-01", "2024-02-01"]
    assert waits["b 2024-01-31"] == ["a 2024-01-30", "a 2024-01-31"]
    assert waits["b 2024-01-30"] == ["a 2024-01-30"]  # A's 2024-01-29 is not rewritten
    assert waits["c 2024-01-01"] == ["b 2024-01-30", "b 2024-01-31"]
    assert waits["c 2024-02-01"] == ["b 2024-02-01", "b 2024-02-02", "b 2024-02-03"]
    assert all(w < s.index for s in plan.slices for w in s.waits_for)
    assert [e.downstream for e in plan.edges] == ["b", "c"]
    # --order reverse: each job's keys newest first, still upstream jobs first
    backwards = build_slice_graph(graph, definitions, "a", FOUR_DAYS, order="reverse")
    assert [s.label for s in backwards.slices][:2] == ["a 2024-02-02", "a 2024-02-01"]
    assert {s.label for s in backwards.slices} == set(by_label)
    # A's 2024-01-31 failing blocks B's two days that read it and both months
    failed = by_label["a 2024-01-31"].index
    blocked = blocked_by({s.index: s.waits_for for s in plan.slices}, {failed})
    assert sorted(plan.slices[i].label for i in blocked) == [
        "b 2024-01-31", "b 2024-02-01", "c 2024-01-01", "c 2024-02-01"
    ]  # fmt: skip


def test_a_dependant_without_a_backfill_definition_is_refused_in_one_line() -> None:
    registry = chain()

    @registry.job(sources=[source(C_OUT)])
    def report() -> None:
        @task
        def show() -> None: ...

        show()

    graph = build_table_graph(registry)
    definitions = {job.name: job.backfill for job in registry}
    with pytest.raises(UsageError, match=r"job 'report' reads main\.chain\.c_out .* no backfill"):
        build_slice_graph(graph, definitions, "a", FOUR_DAYS)


class InstantBackend:
    """Runs that end as they start: slice ``i`` fails while ``i`` is in ``failing``.

    It checks, at each submission, that every slice the slice waits for was reported
    succeeded by a poll before (what the scheduler can know), and records the order.
    """

    kind = "local"

    def __init__(self, ledger: Ledger, failing: Collection[int]) -> None:
        self.index = {r.label: r.index for r in ledger.slices}
        self.waits = {r.index: r.waits_for for r in ledger.slices}
        self.failing = set(failing)
        self.launched: list[int] = []
        self.early: list[int] = []  # launched before what it waits for was seen to succeed
        self.jobs: list[str | None] = []
        self._seen_succeeded = {r.index for r in ledger.slices if r.state == "succeeded"}
        self._runs: dict[str, int] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()

    def on_end(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)

    def submit(self, request: SubmitRequest) -> Submitted:
        index = self.index[request.label]
        with self._lock:
            if not set(self.waits[index]) <= self._seen_succeeded:
                self.early.append(index)
            self.launched.append(index)
            self.jobs.append(request.job)
            run_id = f"run-{len(self.launched)}"
            self._runs[run_id] = index
        for listener in self._listeners:
            listener(run_id)
        return Submitted(run_id)

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        out = {}
        with self._lock:
            for run_id in run_ids:
                index = self._runs[run_id]
                if index in self.failing:
                    out[run_id] = RunStatus("failed", f"slice {index} fails on purpose")
                else:
                    self._seen_succeeded.add(index)
                    out[run_id] = RunStatus("succeeded")
        return out

    def cancel(self, run_id: str) -> None:
        pass

    def close(self) -> None:
        pass


def make_ledger(root: Path, waits: list[tuple[int, ...]]) -> Ledger:
    """Slice ``i`` runs key ``k{i // 3}`` of job ``j{i % 3}``: jobs share keys."""
    records = [
        SliceRecord(i, (f"k{i // 3}",), {}, (), f"j{i % 3}", waits[i]) for i in range(len(waits))
    ]
    return Ledger(
        root / "ledger.sqlite",
        backfill_id="j0-test",
        job="j0",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=records,
    )


def run(ledger: Ledger, backend: InstantBackend, cap: int, events: list[LaunchEvent]) -> str:
    options = LaunchOptions(max_concurrent=cap, poll_interval=0.01, max_poll_interval=0.05)
    ready = ReadySet(ledger)
    return Scheduler(backend, ledger, options, emit=events.append, ready=ready).run()


def ancestors(index: int, waits: list[tuple[int, ...]]) -> set[int]:
    """Every slice ``index`` reads from, directly or through others (a search of its
    own: the oracle does not use blocked_by)."""
    found: set[int] = set()
    stack = list(waits[index])
    while stack:
        up = stack.pop()
        if up not in found:
            found.add(up)
            stack.extend(waits[up])
    return found


def expected_outcome(waits: list[tuple[int, ...]], failing: set[int]) -> tuple[set[int], set[int]]:
    """``(failed, blocked)``: a slice with a failed ancestor is blocked (never runs, so
    never fails, even when it would have); a failing slice that runs fails."""
    failed: set[int] = set()
    blocked: set[int] = set()
    for index in range(len(waits)):  # waits point to smaller indices
        if ancestors(index, waits) & failed:
            blocked.add(index)
        elif index in failing:
            failed.add(index)
    return failed, blocked


@st.composite
def slice_graphs(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], set[int], int]:
    size = draw(st.integers(1, 10))
    waits = [
        tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        for i in range(size)
    ]
    failing = draw(st.sets(st.integers(0, size - 1), max_size=3))
    return waits, failing, draw(st.integers(1, 4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slice_graphs())
def test_a_slice_launches_only_after_its_upstreams_and_blocked_is_the_dependants_of_failures(
    drawn: tuple[list[tuple[int, ...]], set[int], int],
) -> None:
    waits, failing, cap = drawn
    with tempfile.TemporaryDirectory() as folder:
        ledger = make_ledger(Path(folder), waits)
        backend = InstantBackend(ledger, failing)
        events: list[LaunchEvent] = []
        state = run(ledger, backend, cap, events)
        expected_failed, expected_blocked = expected_outcome(waits, failing)
        assert backend.early == []
        assert sorted(backend.launched) == sorted(set(range(len(waits))) - expected_blocked)
        assert backend.jobs == [f"j{i % 3}" for i in backend.launched]
        pending = {r.index for r in ledger.slices if r.state == "pending"}
        failed = {r.index for r in ledger.slices if r.state == "failed"}
        assert failed == expected_failed
        # blocked = exactly the transitive dependants of the failed slices
        dependants = {i for i in range(len(waits)) if ancestors(i, waits) & failed}
        assert pending == dependants == expected_blocked
        summary = summarize(read_ledger(ledger.path), 0.0)
        assert summary.counts.blocked == len(expected_blocked) == len(summary.blocked)
        said = [e.message for e in events if e.message.startswith("blocked: ")]
        assert len(said) == len(expected_blocked)
        assert state == ("failed" if expected_failed else "succeeded")


def test_resume_runs_the_failed_and_blocked_slices_once_the_failure_is_fixed(
    tmp_path: Path,
) -> None:
    waits: list[tuple[int, ...]] = [(), (), (0,), (1, 2), (3,), ()]
    ledger = make_ledger(tmp_path, waits)
    first = InstantBackend(ledger, failing={0})
    assert run(ledger, first, 2, []) == "failed"
    assert sorted(first.launched) == [0, 1, 5]
    resumed = read_ledger(ledger.path)  # what --resume loads
    assert [r.waits_for for r in resumed.slices] == waits
    second = InstantBackend(resumed, failing=set())
    assert run(resumed, second, 2, []) == "succeeded"
    assert second.launched == [0, 2, 3, 4] and second.early == []
    # two jobs' slices with the same keys never share an idempotency token
    tokens = [a.token for r in resumed.slices for a in r.attempts]
    assert len(tokens) == len(set(tokens))


class CheckingBackend(InstantBackend):
    """Runs whose checks judge the key: slice ``i`` in ``failing`` fails on its ``error``
    check (the task refuses to write: the run fails, the check's result beside it, as
    a Databricks run's check report says); in ``warned``, a ``warn`` check fails and the
    run succeeds (the slice was written)."""

    def __init__(self, ledger: Ledger, failing: Collection[int], warned: Collection[int]):
        super().__init__(ledger, failing)
        self.warned = set(warned)

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        out = super().poll(run_ids)
        for run_id, seen in out.items():
            index = self._runs[run_id]
            if index in self.failing or index in self.warned:
                severity = "error" if index in self.failing else "warn"
                check = CheckResult(
                    "min_row_count(1)", f"k{index // 3}", 0.0, ">= 1", False, "produce",
                    run_id, "0 rows", severity,
                )  # fmt: skip
                message = "check min_row_count(1) failed" if severity == "error" else ""
                out[run_id] = replace(seen, message=message, checks=(check,))
        return out


def test_an_upstream_key_failing_its_check_blocks_exactly_its_dependants(tmp_path: Path) -> None:
    waits: list[tuple[int, ...]] = [(), (), (0,), (1, 2), (3,), (1,)]
    ledger = make_ledger(tmp_path, waits)
    backend = CheckingBackend(ledger, failing={0}, warned={1})
    events: list[LaunchEvent] = []
    assert run(ledger, backend, 2, events) == "failed"
    # 0's error check blocks 2, 3 (through 2) and 4 (through 3); 1's warning blocks nothing
    assert sorted(backend.launched) == [0, 1, 5] and backend.early == []
    states = {r.index: r.state for r in read_ledger(ledger.path).slices}
    assert states == {0: "failed", 1: "succeeded", 2: "pending", 3: "pending", 4: "pending", 5: "succeeded"}  # fmt: skip
    recorded = {r.index: r.attempts[-1].checks for r in read_ledger(ledger.path).slices if r.attempts}  # fmt: skip
    assert [c["severity"] for c in recorded[0]] == ["error"]
    assert [c["severity"] for c in recorded[1]] == ["warn"]
    said = sorted(e.message for e in events if e.message.startswith("blocked: "))
    assert len(said) == 3 and all("j0 k0" in line for line in said), said
