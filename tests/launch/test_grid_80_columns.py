"""Issue 40 item 7: the status grid fits the terminal. At 80 columns (piped, or a narrow
terminal) no row label, key number or legend count is cut: columns wrap into a second
table (weekly keys: 53 columns), the legend breaks between states. Golden files for a
daily, a weekly and an hourly job (Europe/Paris, across the spring DST change);
``DBXDEC_UPDATE_GOLDEN=1`` rewrites them (read the diff before committing it)."""

from __future__ import annotations

import io
import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill, WeeklyBackfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_observations,
)
from databricks_bundle_decorators.launch.plan.history import key_history
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.states import KeyState
from databricks_bundle_decorators.launch.status.status_grid import (
    STATES,
    build_grid,
    ledger_details,
)
from databricks_bundle_decorators.launch.status.status_view import terminal_table

GOLDEN = Path(__file__).with_name("golden")
JOBS = {
    "daily": DailyBackfill(start_date="2024-01-01", end_date="2024-02-29"),
    "weekly": WeeklyBackfill(start_date="2024-W01", end_date="2025-W52"),
    "hourly": HourlyBackfill(
        start_date="2024-03-30T00", end_date="2024-04-01T23", tz="Europe/Paris"
    ),
}


def _grid(kind: str, keys: list[str] | None = None):  # type: ignore[no-untyped-def]
    keys = keys if keys is not None else JOBS[kind].keys()
    history: dict[str, KeyState] = {}
    for i, key in enumerate(keys[: len(keys) * 2 // 3]):
        history[key] = KeyState.SUCCEEDED if i % 7 else KeyState.FAILED
    history[keys[len(keys) // 2]] = KeyState.CANCELLED
    return build_grid(f"{kind}_orders", kind, keys, history)


def render(grid, width: int) -> str:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    console.print(terminal_table(grid, console))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


@pytest.mark.parametrize("kind", list(JOBS))
def test_the_grid_at_80_columns_equals_its_golden_file(kind: str) -> None:
    shown = render(_grid(kind), 80)
    golden = GOLDEN / f"grid_{kind}_80.txt"
    if os.environ.get("DBXDEC_UPDATE_GOLDEN"):
        golden.write_text(shown, encoding="utf-8")
    assert shown == golden.read_text(encoding="utf-8")
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80
    grid = _grid(kind)
    for row in grid.rows:  # every row label whole, on a line of its own
        assert any(line.startswith(f"{row.label} ") for line in lines), row.label
    numbers = {c for i, c in enumerate(grid.columns) if i % 5 == 0}
    headers = " ".join(lines)
    assert all(f" {n} " in f" {headers} " for n in numbers), numbers  # no number cut
    legend = " ".join(line for line in lines if line.startswith(("■", "⊘", "?", "·")))
    for state in STATES:  # every state in the legend, with its count
        assert f"{state} {sum(1 for s in grid.states.values() if s == state)}" in legend


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(list(JOBS)),
    width=st.integers(min_value=40, max_value=200),
    span=st.tuples(st.integers(0, 60), st.integers(1, 80)),
)
def test_no_line_is_wider_than_the_terminal(kind: str, width: int, span: tuple[int, int]) -> None:
    keys = JOBS[kind].keys()
    start = min(span[0], len(keys) - 1)
    chosen = keys[start : start + span[1]]
    grid = _grid(kind, chosen)
    shown = render(grid, width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "…" not in shown
    assert all(state in shown for state in STATES)  # the legend lists every state


# -- the legend's counts, across ranges that fold, and grids read from a ledger -------------

LONG = {
    "daily": DailyBackfill(start_date="2020-01-01", end_date="2022-12-31").keys(),
    "weekly": WeeklyBackfill(start_date="2015-W01", end_date="2026-W52").keys(),
    "hourly": HourlyBackfill("2021-01-01T00", "2024-12-31T23", tz="UTC").keys(),
}


def legend_counts(shown: str) -> dict[str, int]:
    """``{state: count}`` of the legend's entries (``■ succeeded 12``), whichever lines."""
    return {s: int(n) for s, n in re.findall(r"\S (\w+) (\d+)(?=  |$)", shown, re.MULTILINE)}


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from(list(LONG)),
    width=st.integers(min_value=80, max_value=240),
    first=st.integers(0, 1000),
    count=st.integers(1, 20_000),
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=12),
)
def test_any_range_fits_and_its_legend_counts_every_state(
    kind: str, width: int, first: int, count: int, states: list[KeyState]
) -> None:
    keys = LONG[kind][first : first + count] or LONG[kind][-1:]
    history = dict(zip(keys, itertools.cycle(states), strict=False))
    grid = build_grid("nightly_sales", kind, keys, history)
    shown = render(grid, width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert legend_counts(shown) == {s: grid.counts().get(s, 0) for s in STATES}


def test_a_grid_read_from_a_ledger_keeps_its_labels_and_counts_at_80(tmp_path: Path) -> None:
    keys = WeeklyBackfill(start_date="2023-W01", end_date="2024-W26").keys()
    plan = BackfillPlan("nightly_sales", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
    ledger = Ledger.create(
        tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions(), backfill_id="b1"
    )
    ends = itertools.cycle(["succeeded", "failed", "cancelled", "running", "succeeded"])
    for record, end in zip(ledger.slices[:70], ends, strict=False):
        attempt = Attempt(1, "t", end, f"r-{record.index}", submitted_at=10.0)  # type: ignore[arg-type]
        ledger.update(record.with_attempt(attempt))
    history = key_history(ledger_observations([ledger]))
    grid = build_grid("nightly_sales", "weekly", keys, history, ledger_details([ledger]))
    shown = render(grid, 80)
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line.startswith("2023 ") for line in lines) == 2  # its 53 weeks wrap once
    assert legend_counts(shown) == {
        "succeeded": 28, "failed": 14, "running": 14, "missing": 8, "unknown": 0, "cancelled": 14,
    }  # fmt: skip
