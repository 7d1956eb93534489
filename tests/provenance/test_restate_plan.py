"""``dbxdec restate``'s planning without Spark: the slice graph from several roots (a
source read by two jobs of a chain), the reasons of a table range's keys, ``--versions``.
"""

from __future__ import annotations

import pytest

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, Registry
from databricks_bundle_decorators.bundle.table_graph import build_table_graph
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.plan.slice_graph import (
    build_slice_graph,
    build_slice_graph_from,
)
from databricks_bundle_decorators.launch.provenance.restate import (
    Roots,
    Versions,
    plan_restate,
    table_roots,
)
from tests.launch.test_downstream_graph import A_OUT, B_OUT, C_OUT, _job

SOURCE = "main.raw.feed"


def two_readers() -> Registry:
    """a reads the source; b reads the source and a (lookback 1); c (monthly) reads b."""
    registry = Registry()
    _job(registry, "a", A_OUT, [SOURCE], DailyBackfill("2024-01-01", "2024-03-31"))
    b_def = DailyBackfill("2024-01-01", "2024-03-31", lookback=1)
    _job(registry, "b", B_OUT, [SOURCE, A_OUT], b_def)
    _job(registry, "c", C_OUT, [B_OUT], MonthlyBackfill("2024-01-01", "2024-03-01"))
    return registry


def test_roots_in_two_jobs_plan_each_once_with_what_they_map_to() -> None:
    registry = two_readers()
    graph = build_table_graph(registry)
    definitions = {job.name: job.backfill for job in registry}
    roots = {"b": ["2024-02-10"], "a": ["2024-01-30"]}
    plan = build_slice_graph_from(graph, definitions, roots)
    waits = {s.label: [plan.slices[w].label for w in s.waits_for] for s in plan.slices}
    assert plan.root == "a"  # the first root, upstream first
    assert plan.keys_of("a") == ["2024-01-30"]
    assert plan.keys_of("b") == ["2024-01-30", "2024-01-31", "2024-02-10"]  # own + mapped
    assert plan.keys_of("c") == ["2024-01-01", "2024-02-01"]
    assert waits["b 2024-01-31"] == ["a 2024-01-30"] and waits["b 2024-02-10"] == []
    assert waits["c 2024-02-01"] == ["b 2024-02-10"]
    # one root is build_slice_graph's plan
    one = build_slice_graph_from(graph, definitions, {"a": ["2024-01-30"]})
    assert one == build_slice_graph(graph, definitions, "a", ["2024-01-30"])
    with pytest.raises(UsageError):
        build_slice_graph_from(graph, definitions, {})


def test_a_table_range_restates_its_writer_s_keys_and_says_why_each_dependant_is_in() -> None:
    jobs = list(two_readers())
    plan = plan_restate(jobs, table_roots(jobs, A_OUT, start="2024-01-03", end="2024-01-04"))
    assert plan.keys_by_job() == {
        "a": ["2024-01-03", "2024-01-04"],
        "b": ["2024-01-03", "2024-01-04", "2024-01-05"],
        "c": ["2024-01-01"],
    }
    assert plan.reasons[("a", "2024-01-03")] == [f"in 2024-01-03..2024-01-04 of {A_OUT}"]
    assert plan.reasons[("b", "2024-01-04")] == [f"reads {A_OUT} 2024-01-03, 2024-01-04 (restated)"]
    assert plan.to_json()["jobs"]["c"] == [
        {
            "key": "2024-01-01",
            "reasons": [f"reads {B_OUT} 2024-01-03, 2024-01-04, 2024-01-05 (restated)"],
        }
    ]
    assert table_roots(jobs, "b", start="2024-02-01", end=None).keys["b"][0] == "2024-02-01"
    for target, start in ((SOURCE, "2024-01-03"), ("main.nope", "2024-01-03"), (A_OUT, None)):
        with pytest.raises(UsageError):
            table_roots(jobs, target, start=start, end=None)
    roots = Roots("x")
    roots.add("a", "2024-01-01", "r1")
    roots.add("a", "2024-01-01", "r1")
    assert roots.keys == {"a": ["2024-01-01"]} and roots.reasons[("a", "2024-01-01")] == ["r1"]


@pytest.mark.parametrize(
    ("text", "first", "last"), [("41", 41, 41), ("41-43", 41, 43), (" 0..2 ", 0, 2)]
)
def test_versions_are_one_or_an_inclusive_range(text: str, first: int, last: int) -> None:
    versions = Versions.parse(text)
    assert (versions.first, versions.last) == (first, last)
    assert first in versions and last + 1 not in versions
    assert versions.label() == (
        f"version {first}" if first == last else f"versions {first}..{last}"
    )


@pytest.mark.parametrize("text", ["", "x", "1-", "-1", "3-1", "1,2"])
def test_malformed_versions_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        Versions.parse(text)
