"""The backfill timeline: slot counts from intervals, stragglers, and bars from a ledger."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
)
from databricks_bundle_decorators.launch.status.timeline import (
    build_timeline,
    slot_steps,
    stragglers,
    timeline_html,
)

intervals = st.lists(
    st.tuples(st.integers(0, 100), st.integers(1, 50)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=20,
)


def _max_overlap(spans: list[tuple[int, int]]) -> int:
    instants = {start for start, _ in spans}
    return max((sum(s <= t < e for s, e in spans) for t in instants), default=0)


@given(intervals)
def test_step_chart_peak_is_the_max_overlap(spans: list[tuple[int, int]]) -> None:
    steps = slot_steps(spans)
    assert max((n for _, n in steps), default=0) == _max_overlap(spans)
    assert not steps or steps[-1][1] == 0


def test_a_run_ending_when_another_starts_does_not_overlap_it() -> None:
    assert slot_steps([(0, 10), (10, 20)]) == [(0, 1), (10, 1), (20, 0)]


def test_straggler_is_over_twice_the_median() -> None:
    assert stragglers([10, 12, 11, 25]) == [False, False, False, True]
    assert stragglers([10, 12, 11, 22]) == [False, False, False, False]
    assert stragglers([1, 100]) == [False, False]


def sample_ledger(path: Path) -> Ledger:
    """Four slices, max_concurrent 2: a retry (failed then succeeded) and a straggler."""

    def done(n: int, start: float, end: float, state: str = "succeeded") -> Attempt:
        return Attempt(n, f"t{n}", state, f"r{start}", None, start, end)  # type: ignore[arg-type]

    slices = [
        SliceRecord(0, ("2024-01-01",), {}, (done(1, 0, 10),)),
        SliceRecord(1, ("2024-01-02",), {}, (done(1, 0, 8, "failed"), done(2, 10, 20))),
        SliceRecord(2, ("2024-01-03",), {}, (done(1, 10, 70),)),
        SliceRecord(3, ("2024-01-04",), {}, (done(1, 20, 28, "cancelled"),)),
        SliceRecord(4, ("2024-01-05",), {}, (Attempt(1, "t", "running", "r", None, 70.0),)),
    ]
    return Ledger(
        path,
        backfill_id="sales-20240101T000000-abcd",
        job="sales",
        backend=BackendSpec("local"),
        options=LaunchOptions(max_concurrent=2),
        slices=slices,
        created_at=0.0,
    )


def test_bars_from_a_ledger(tmp_path: Path) -> None:
    timeline = build_timeline(sample_ledger(tmp_path / "l.json"), now=90.0)
    outcomes = [(b.label, b.attempt, b.outcome) for b in timeline.bars]
    assert ("2024-01-02", 1, "failed") in outcomes
    assert ("2024-01-02", 2, "succeeded") in outcomes
    assert ("2024-01-05", 1, "running") in outcomes
    assert [(b.label, b.attempt) for b in timeline.stragglers] == [("2024-01-03", 1)]
    assert max(n for _, n in timeline.steps) == 2
    page = timeline_html(timeline)
    assert "max_concurrent 2" in page and "cap reached" in page
