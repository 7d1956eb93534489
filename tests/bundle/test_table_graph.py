"""The bundle-wide table graph: writers (IoManagers), readers (sources), edges, cycles."""

from __future__ import annotations

from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    MonthlyBackfill,
    MultiBackfill,
    Registry,
    StaticBackfill,
    source,
    task,
)
from databricks_bundle_decorators.backfill.mapping import EVERY_KEY, WINDOW, downstream_keys
from databricks_bundle_decorators.bundle.table_graph import (
    build_table_graph,
    find_cycle,
    render_text,
)
from databricks_bundle_decorators.errors import DefinitionError
from databricks_bundle_decorators.io_managers import IoManager, SparkTableIoManager

A_OUT = "main.chain.a_out"
B_OUT = "main.chain.b_out"
C_OUT = "main.chain.c_out"


def _writer_job(
    registry: Registry, name: str, table: str | None, reads: list[Any], backfill: Any
) -> None:
    def body() -> None:
        static = "region" if isinstance(backfill, MultiBackfill) else None
        io = (
            SparkTableIoManager(table, partition_column="day", static_column=static)
            if table
            else None
        )

        @task(io_manager=io)
        def produce() -> None: ...

        produce()

    body.__name__ = name
    registry.job(name=name, backfill=backfill, sources=reads)(body)


def chain(registry: Registry) -> None:
    """Issue 30's chain: A (daily) -> B (daily, lookback 1) -> C (monthly)."""
    _writer_job(registry, "a", A_OUT, [], DailyBackfill("2024-01-01", "2024-03-31"))
    _writer_job(
        registry,
        "b",
        B_OUT,
        [source(A_OUT, event_time="day")],
        DailyBackfill("2024-01-01", "2024-03-31", lookback=1),
    )
    _writer_job(
        registry,
        "c",
        C_OUT,
        [source(B_OUT.upper(), event_time="day")],  # Unity Catalog names ignore case
        MonthlyBackfill("2024-01-01", "2024-03-01"),
    )


def test_the_chain_has_an_edge_per_writer_and_reader() -> None:
    registry = Registry()
    chain(registry)
    _writer_job(registry, "report", None, [source(A_OUT)], None)  # unfiltered, unpartitioned
    graph = build_table_graph(registry)
    assert graph.jobs == ("a", "b", "c", "report")
    assert graph.writes["a"] == (A_OUT,) and graph.reads["b"] == (A_OUT,)
    assert graph.writers(A_OUT) == ["a"] and graph.readers(A_OUT) == ["b", "report"]
    assert graph.writers(B_OUT.upper()) == ["b"] and graph.readers(B_OUT) == ["c"]
    edges = [(e.upstream, e.downstream, e.table, e.keys.mapping) for e in graph.edges]
    assert edges == [
        ("a", "b", A_OUT, WINDOW),
        ("a", "report", A_OUT, EVERY_KEY),
        ("b", "c", B_OUT, WINDOW),
    ]
    a_to_b = graph.dependants("a")[0].keys
    assert downstream_keys(a_to_b, ["2024-01-31"]) == ["2024-01-31", "2024-02-01"]
    assert [e.upstream for e in graph.upstreams("c")] == ["b"]


def test_the_json_form_follows_the_documented_schema() -> None:
    registry = Registry()
    chain(registry)
    data = build_table_graph(registry).to_json()
    assert data["version"] == 1
    assert data["jobs"][1] == {"name": "b", "writes": [B_OUT], "reads": [A_OUT]}
    assert data["tables"][0] == {"name": A_OUT, "writers": ["a"], "readers": ["b"]}
    assert data["edges"][0] == {
        "upstream": "a",
        "downstream": "b",
        "table": A_OUT,
        "mapping": "window",
        "upstream_kind": "daily",
        "downstream_kind": "daily",
        "lookback": 1,
        "per_static_value": False,
        "description": "daily -> daily (window overlap, lookback 1)",
    }


def test_the_text_form_lists_jobs_tables_and_edges() -> None:
    registry = Registry()
    chain(registry)
    lines = render_text(build_table_graph(registry))
    assert lines[0] == "jobs (3):"
    assert f"  {A_OUT}  written by a; read by b" in lines
    assert f"  b -> c  via {B_OUT}: daily -> monthly (window overlap, lookback 0)" in lines


def test_static_x_time_jobs_map_per_static_value() -> None:
    registry = Registry()
    regions = StaticBackfill(["eu", "us"])
    _writer_job(registry, "a", A_OUT, [], MultiBackfill(regions, DailyBackfill("2024-01-01")))
    _writer_job(
        registry,
        "b",
        B_OUT,
        [source(A_OUT, event_time="day")],
        MultiBackfill(regions, MonthlyBackfill("2024-01-01")),
    )
    (edge,) = build_table_graph(registry).edges
    assert edge.keys.per_static_value
    assert downstream_keys(edge.keys, ["us:2024-02-03"]) == ["us:2024-02-01"]


def test_a_job_reading_its_own_table_makes_no_edge() -> None:
    registry = Registry()
    _writer_job(registry, "a", A_OUT, [source(A_OUT, event_time="day")], None)
    graph = build_table_graph(registry)
    assert graph.edges == () and find_cycle(graph) is None


def test_a_cycle_between_jobs_is_refused_with_one_line_naming_it() -> None:
    registry = Registry()
    _writer_job(registry, "x", A_OUT, [source(C_OUT)], None)
    _writer_job(registry, "y", B_OUT, [source(A_OUT)], None)
    _writer_job(registry, "z", C_OUT, [source(B_OUT)], None)
    _writer_job(registry, "free", "main.chain.free", [source(A_OUT)], None)
    with pytest.raises(DefinitionError) as raised:
        build_table_graph(registry)
    message = str(raised.value)
    assert "\n" not in message
    assert "cycle: x -> y -> z -> x" in message
    assert f"(through {A_OUT}, {B_OUT}, {C_OUT})" in message


def test_the_cycle_check_finds_a_cycle_entered_from_outside() -> None:
    """The walk starts at a job upstream of the cycle; the cycle reported is the loop
    alone, not the path into it."""
    registry = Registry()
    _writer_job(registry, "entry", "main.chain.entry", [], None)
    _writer_job(registry, "p", A_OUT, [source("main.chain.entry"), source(B_OUT)], None)
    _writer_job(registry, "q", B_OUT, [source(A_OUT)], None)
    with pytest.raises(DefinitionError, match=r"cycle: p -> q -> p \(through"):
        build_table_graph(registry)


def test_an_io_manager_that_names_no_table_writes_none() -> None:
    """The contract's default: a custom IoManager that does not override ``tables``."""

    class Memory(IoManager):
        def handle_output(self, context: Any, obj: Any) -> None: ...

        def load_input(self, context: Any) -> Any: ...

    registry = Registry()

    @registry.job
    def kept() -> None:
        @task(io_manager=Memory())
        def produce() -> None: ...

        produce()

    assert build_table_graph(registry).writes == {"kept": ()}
