"""The partition grid: calendar layouts and the standalone HTML page."""

from __future__ import annotations

import io

from rich.console import Console

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.launch.status_grid import build_grid, grid_html, grid_table


def test_daily_keys_form_a_month_by_day_calendar() -> None:
    keys = DailyBackfill(start_date="2024-01-30", end_date="2024-02-02").keys()
    grid = build_grid("nightly", "daily", keys, {"2024-01-31": "failed"})
    assert [row.label for row in grid.rows] == ["2024-01", "2024-02"]
    assert grid.rows[0].cells[29:] == ("2024-01-30", "2024-01-31")
    assert grid.rows[1].cells[:3] == ("2024-02-01", "2024-02-02", None)
    assert grid.counts() == {"missing": 3, "failed": 1}


def test_hourly_keys_form_a_day_by_hour_calendar() -> None:
    keys = HourlyBackfill("2024-03-31T00", "2024-03-31T04", tz="Europe/Berlin").keys()
    grid = build_grid("h", "hourly", keys, {})
    assert grid.rows[0].label == "2024-03-31"
    assert grid.rows[0].cells[2] is None  # the hour skipped by DST has no cell


def test_terminal_and_html_render_the_same_states() -> None:
    grid = build_grid("regions", "static", ["us", "eu<x>"], {"us": "succeeded", "eu<x>": "running"})
    console = Console(file=io.StringIO(), width=100)
    console.print(grid_table(grid))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "■ us" in text and "succeeded 1" in text and "running 1" in text
    page = grid_html(grid)
    assert 'title="us: succeeded"' in page and "eu&lt;x&gt;" in page and "<x>" not in page
