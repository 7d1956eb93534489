"""The partition grid: calendar layouts and the standalone HTML page."""

from __future__ import annotations

import io
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.status.status_grid import (
    KeyDetail,
    PageOrigin,
    build_grid,
    grid_html,
    grid_table,
    ledger_details,
)


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


# -- readable without colour; failures explained (issue 14) -----------------------------------

DAYS = DailyBackfill(start_date="2024-04-01", end_date="2024-04-05").keys()
HISTORY = {
    "2024-04-01": "succeeded",
    "2024-04-02": "running",
    "2024-04-03": "failed",
    "2024-04-04": "failed",
}
DETAIL = KeyDetail(
    "failed",
    run_id="95",
    url="https://adb-1.azuredatabricks.net/jobs/1001/runs/95",
    error="FAILED: table locked",
    backfill_id="nightly-20240601T020000-1a2b",
)


def test_without_colour_each_state_has_its_own_glyph_and_a_legend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    console = Console(file=io.StringIO(), width=80)
    console.print(grid_table(build_grid("nightly", "daily", DAYS, HISTORY)))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    row = next(line for line in text.splitlines() if line.startswith("2024-04"))
    assert row.split()[1:] == ["■", "○", "✗", "✗", "·"]  # 04-01 .. 04-05
    assert "■ succeeded 1  ✗ failed 2  ○ running 1  · missing 1" in text


def test_the_html_page_marks_states_by_glyph_and_pattern_not_only_colour() -> None:
    page = grid_html(build_grid("nightly", "daily", DAYS, HISTORY))
    cells = dict(re.findall(r'<td class="(\w+)" title="[^"]*">([^<]*)</td>', page))
    assert cells == {"succeeded": "■", "running": "○", "failed": "✗", "missing": "·"}
    failed_style = re.search(r"td\.failed, span\.failed \{([^}]*)\}", page)
    running_style = re.search(r"td\.running, span\.running \{([^}]*)\}", page)
    assert failed_style is not None and "repeating-linear-gradient" in failed_style.group(1)
    assert running_style is not None and "radial-gradient" in running_style.group(1)


def test_a_failed_cell_names_its_error_run_and_links_the_run() -> None:
    stale = KeyDetail("succeeded", run_id="12")  # an older run: the key failed since
    details = {"2024-04-03": DETAIL, "2024-04-04": stale}
    grid = build_grid("nightly", "daily", DAYS, HISTORY, details)
    origin = PageOrigin(
        datetime(2024, 6, 1, 2, 30, tzinfo=timezone.utc),
        "workspace https://adb-1.azuredatabricks.net, job nightly (job id 1001)",
        ("nightly-20240601T020000-1a2b",),
    )
    page = grid_html(grid, origin)
    assert 'title="2024-04-03: failed, run 95: FAILED: table locked"' in page
    assert '<a href="https://adb-1.azuredatabricks.net/jobs/1001/runs/95">✗</a>' in page
    failures = page[page.index("Failed keys (2)") :]
    assert "<td>2024-04-03</td><td><a href=" in failures and "run 95</a>" in failures
    assert "table locked" in failures
    assert "<td>2024-04-04</td><td>unknown</td>" in failures  # no detail of its failure
    assert "Made 2024-06-01T02:30:00+00:00 from workspace https://adb-1.azuredatabricks.net" in page
    assert "job id 1001" in page and "backfill nightly-20240601T020000-1a2b" in page


def test_ledger_details_keep_the_latest_attempt_and_build_the_run_page(tmp_path: Path) -> None:
    plan = BackfillPlan("nightly", (Slice(0, ("2024-04-03",)),))
    spec = BackendSpec("databricks", 1001, host="https://adb-1.azuredatabricks.net")
    ledger = Ledger.create(tmp_path, plan, backend=spec, options=LaunchOptions(), backfill_id="b1")
    first = Attempt(1, "t", "failed", "94", submitted_at=10.0, error="FAILED: first")
    second = Attempt(2, "t", "failed", "95", submitted_at=20.0, error="FAILED: table locked")
    ledger.update(ledger.slices[0].with_attempt(first).with_attempt(second))
    assert ledger_details([ledger]) == {
        "2024-04-03": KeyDetail(
            "failed",
            "95",
            "https://adb-1.azuredatabricks.net/jobs/1001/runs/95",
            "FAILED: table locked",
            "b1",
        )
    }
