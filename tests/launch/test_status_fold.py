"""Folded status grids (launch/status/status_view.py): a cell per day,
week or month when a cell per key would not fit, counting every key once."""

from __future__ import annotations

import io
import re
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.backfill.multi import SEPARATOR
from databricks_bundle_decorators.launch.plan.states import KeyState
from databricks_bundle_decorators.launch.status.status_grid import (
    STATES,
    KeyDetail,
    PageOrigin,
    PartitionGrid,
    build_grid,
    grid_html,
    grid_table,
)
from databricks_bundle_decorators.launch.status.status_view import (
    PAGE_FULL_KEYS,
    FoldedCell,
    choose_fold,
    fold_grid,
    fold_levels,
    status_page,
    status_table,
)

TEN_YEARS = HourlyBackfill("2016-01-01T00", "2025-12-31T13", tz="UTC").keys()


def hourly_grid(hours: int, states: dict[str, KeyState] | None = None) -> PartitionGrid:
    keys = TEN_YEARS[:hours]
    history = states if states is not None else {k: "failed" for k in keys[6::7]}
    return build_grid("hourly_job", "hourly", keys, history)


def render(renderable: object, width: int = 80) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


@settings(max_examples=40, deadline=None)
@given(
    first=st.integers(0, 80_000),
    hours=st.integers(1, 3_000),
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=50),
    level=st.sampled_from(["day", "week", "month"]),
)
def test_folded_counts_sum_to_the_keys_per_state(
    first: int, hours: int, states: list[KeyState], level: str
) -> None:
    keys = TEN_YEARS[first : first + hours]
    history = {k: states[i % len(states)] for i, k in enumerate(keys)}
    grid = build_grid("j", "hourly", keys, history)
    folded = fold_grid(grid, level)  # type: ignore[arg-type]
    cells = list(folded.cells())
    assert sum(cell.total for cell in cells) == len(keys)
    for i, state in enumerate(STATES):
        assert sum(cell.counts[i] for cell in cells) == grid.counts().get(state, 0)
    assert len({cell.label for cell in cells}) == len(cells)  # a period has one cell


@given(st.lists(st.integers(0, 5), min_size=6, max_size=6).filter(any))
def test_a_folded_cell_shows_its_worst_key(counts: list[int]) -> None:
    cell = FoldedCell("2024-01-05", tuple(counts))
    shown = {"succeeded": counts[0], "failed": counts[1], "running": counts[2]}
    if counts[1]:
        assert cell.worst == "failed"
    elif counts[5]:
        assert cell.worst == "cancelled"  # not a success either: rerun like a failure
    elif counts[3]:
        assert cell.worst == "missing"
    elif counts[4]:
        assert cell.worst == "unknown"  # no record beyond the run history: before running
    elif counts[2]:
        assert cell.worst == "running"
    else:
        assert cell.worst == "succeeded" and shown["succeeded"]
    assert cell.describe().startswith("2024-01-05: ")


def test_calendar_folds_of_hourly_keys() -> None:
    grid = hourly_grid(24 * 60)  # January and February 2016
    days = fold_grid(grid, "day")
    assert [r.label for r in days.rows] == ["2016-01", "2016-02"]
    first = days.rows[0].cells[0]
    assert first is not None and first.label == "2016-01-01" and first.total == 24
    assert days.rows[1].cells[29:] == (None, None)  # 2016 is a leap year: 29 February
    months = fold_grid(grid, "month")
    assert [c.label for c in months.cells()] == ["2016-01", "2016-02"]
    weeks = fold_grid(grid, "week")
    assert [r.label for r in weeks.rows] == ["2015", "2016"]  # 1 January 2016: ISO 2015-W53
    assert next(weeks.cells()).label == "2015-W53"


def test_static_x_daily_folds_its_time_columns_per_static_row() -> None:
    days = DailyBackfill("2024-01-01", "2024-03-31").keys()
    keys = [f"{region}{SEPARATOR}{day}" for region in ("eu", "us") for day in days]
    grid = build_grid("j", "static x daily", keys, {f"us{SEPARATOR}2024-02-10": "failed"})
    folded = fold_grid(grid, "month")
    assert [r.label for r in folded.rows] == ["eu", "us"]
    assert folded.columns == ("2024-01", "2024-02", "2024-03")
    assert [c.worst for c in folded.rows[1].cells if c is not None] == [
        "missing",
        "failed",
        "missing",
    ]


def test_kinds_that_never_fold() -> None:
    assert fold_levels("static") == fold_levels("monthly") == fold_levels("weekly") == ()
    grid = build_grid("j", "static", [str(i) for i in range(2000)], {})
    assert choose_fold(grid, max_rows=10, width=80) is None


def test_a_grid_that_fits_is_not_folded_and_prints_as_before() -> None:
    grid = hourly_grid(24 * 3)
    assert choose_fold(grid, max_rows=60, width=80) is None
    assert render(status_table(grid, max_rows=60, width=80)) == render(grid_table(grid, 80))


def test_ten_years_of_hourly_keys_fold_to_fit_the_terminal() -> None:
    grid = hourly_grid(len(TEN_YEARS))
    folded = choose_fold(grid, max_rows=60, width=80)
    assert folded is not None and folded.unit == "month" and len(folded.rows) == 10
    wide = choose_fold(grid, max_rows=130, width=120)
    assert wide is not None and wide.unit == "day" and len(wide.rows) == 120
    text = render(status_table(grid, max_rows=60, width=80), width=80)
    assert "A cell is one month of hourly keys" in text
    assert f"{len(TEN_YEARS)} keys in 120 cells" in " ".join(text.split())  # wrapped anywhere
    assert len(text.splitlines()) < 25


def test_a_small_page_is_the_page_of_one_cell_per_key() -> None:
    grid = hourly_grid(PAGE_FULL_KEYS)
    origin = PageOrigin(datetime(2026, 1, 1, tzinfo=timezone.utc), "local ledgers")
    assert status_page(grid, origin) == grid_html(grid, origin)


def test_a_large_page_folds_opens_per_month_and_groups_its_failures() -> None:
    keys = TEN_YEARS
    history: dict[str, KeyState] = {k: "succeeded" for k in keys}
    failed = keys[96:120]  # one run of 24 keys: 5 January 2016
    details = {k: KeyDetail("failed", "77", "https://x/run/77", "boom") for k in failed}
    history.update(dict.fromkeys(failed, "failed"))
    grid = build_grid("hourly_job", "hourly", keys, history, details)
    page = status_page(grid, PageOrigin(datetime(2026, 1, 1, tzinfo=timezone.utc), "here"))
    assert len(page.encode()) < 1_000_000
    assert "<script" not in page
    assert page.count("<details>") == 120  # a month each
    assert "A cell is one day of hourly keys" in page
    assert 'title="2016-01-05: 24 failed"' in page
    assert 'title="2016-01-06: 24 succeeded"' in page
    assert re.search(r"<summary>2016-01: 720 succeeded, 24 failed</summary>", page)
    assert f"{failed[0]}..{failed[-1]} (24 keys)" in page
    assert '<a href="https://x/run/77">run 77</a>' in page


def test_key_details_count_every_key_of_their_month() -> None:
    start = datetime(2016, 1, 1, tzinfo=timezone.utc)
    keys = [(start + timedelta(hours=h)).strftime("%Y-%m-%dT%H") for h in range(6000)]
    page = status_page(build_grid("j", "hourly", keys, {}))
    counted = sum(int(n) for n in re.findall(r"<summary>\d{4}-\d\d: (\d+) missing", page))
    assert counted == len(keys)
    glyphs = sum(len(m) for m in re.findall(r"<i class=m>([^<]*)</i>", page)) // 2
    assert glyphs == len(keys)


@settings(max_examples=25, deadline=None)
@given(
    statics=st.lists(st.sampled_from(["eu", "us", "apac"]), min_size=1, max_size=3, unique=True),
    first=st.integers(0, 80_000),
    hours=st.integers(1, 1_500),
    level=st.sampled_from(["day", "week", "month"]),
)
def test_a_static_x_hourly_fold_counts_every_key_in_its_static_row(
    statics: list[str], first: int, hours: int, level: str
) -> None:
    times = TEN_YEARS[first : first + hours]
    keys = [f"{s}{SEPARATOR}{t}" for s in statics for t in times]
    history: dict[str, KeyState] = {k: "failed" for k in keys[::5]}
    grid = build_grid("j", "static x hourly", keys, history)
    folded = fold_grid(grid, level)  # type: ignore[arg-type]
    assert [r.label for r in folded.rows] == statics
    for row in folded.rows:
        assert sum(c.total for c in row.cells if c is not None) == len(times)
    assert list(folded.columns) == sorted(folded.columns)  # periods in time order
    failed = sum(c.counts[STATES.index("failed")] for c in folded.cells())
    assert failed == len(keys[::5])
