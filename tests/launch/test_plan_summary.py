"""The summary of a large plan (launch/plan/plan_summary.py, cli/output/plan_output.py): key spans,
what the selection skipped and why, and the dry run's JSON written run by run."""

from __future__ import annotations

import io
import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.cli.output.plan_output import summary_lines, write_plan_json
from databricks_bundle_decorators.launch.ledger.ledger import SliceRecord
from databricks_bundle_decorators.launch.plan.plan_summary import (
    PlanSelection,
    key_spans,
    plan_selection,
    selection_filter,
)
from databricks_bundle_decorators.launch.plan.request import BackfillRequest

UNIVERSE = [f"k{i:03d}" for i in range(200)]


@given(st.sets(st.integers(0, 199)))
def test_spans_cover_the_keys_exactly_and_are_maximal(chosen: set[int]) -> None:
    keys = {UNIVERSE[i] for i in chosen}
    spans = key_spans(UNIVERSE, keys)
    covered = [
        k for s in spans for k in UNIVERSE[UNIVERSE.index(s.first) : UNIVERSE.index(s.last) + 1]
    ]
    assert covered == sorted(keys)  # each key once, in order, nothing else
    assert sum(s.count for s in spans) == len(keys)
    for before, after in itertools.pairwise(spans):
        assert UNIVERSE.index(after.first) > UNIVERSE.index(before.last) + 1  # a gap between


def test_span_labels() -> None:
    spans = key_spans(UNIVERSE, {"k001", "k002", "k003", "k007"})
    assert [(s.label, s.count) for s in spans] == [("k001..k003", 3), ("k007", 1)]


def test_the_selection_of_a_request_and_its_filter() -> None:
    backfill = DailyBackfill("2024-01-01", "2024-12-31")
    whole = plan_selection(backfill, BackfillRequest("j", start="2024-01-01", end="2024-01-31"))
    assert (whole.selected, len(whole.universe), whole.filter) == (31, 31, "")
    picked = plan_selection(backfill, BackfillRequest("j", keys=("2024-01-09", "2024-01-02")))
    assert picked.selected == 2 and picked.universe[0] == "2024-01-02" and len(picked.universe) == 8
    assert selection_filter(BackfillRequest("j", rerun="failed")).startswith("--rerun failed")
    assert selection_filter(BackfillRequest("j", catchup=True)).startswith("catch-up")


def _slices(keys: list[str]) -> list[SliceRecord]:
    return [SliceRecord(i, (k,), {"backfill_key": k}) for i, k in enumerate(keys)]


def test_summary_names_spans_and_what_a_rerun_skipped() -> None:
    selection = PlanSelection(
        len(UNIVERSE), UNIVERSE, "--rerun failed: only keys whose latest run failed"
    )
    planned = [*UNIVERSE[:10], *UNIVERSE[20:25], *UNIVERSE[199:]]
    lines = summary_lines(_slices(planned), selection)
    assert lines == [
        "Keys: 16 in 3 contiguous spans: k000..k009 (10), k020..k024 (5), k199 (1)",
        "Skipped: 184 of 200 selected keys (--rerun failed: only keys whose latest run failed)",
    ]
    many = summary_lines(_slices(UNIVERSE[::2]), PlanSelection(200, UNIVERSE, ""))
    assert many == [
        "Keys: 100 in 100 contiguous spans: k000 (1), k002 (1), k004 (1), k006 (1), k008 (1)"
        " and 95 more"
    ]


@given(st.lists(st.text(max_size=5), max_size=20), st.booleans())
def test_streamed_json_is_the_document_json_dumps_writes(keys: list[str], tasks: bool) -> None:
    header = {"job": "j", "dry_run": True, "warnings": ['w\n"'], "tasks": ["a"] if tasks else None}
    slices = [SliceRecord(i, (k,), {"backfill_key": k}) for i, k in enumerate(keys)]
    out = io.StringIO()
    write_plan_json(header, slices, out)
    runs = [
        {"run": s.index + 1, "keys": list(s.keys), "parameters": dict(s.parameters)} for s in slices
    ]
    assert out.getvalue() == json.dumps({**header, "runs": runs}) + "\n"


def test_streamed_json_across_chunks_is_one_valid_document() -> None:
    keys = [f"k{i}" for i in range(2500)]  # more runs than one chunk holds
    out = io.StringIO()
    write_plan_json({"job": "j"}, _slices(keys), out)
    document = json.loads(out.getvalue())
    assert [run["keys"] for run in document["runs"]] == [[k] for k in keys]
    assert [run["run"] for run in document["runs"]] == list(range(1, 2501))
