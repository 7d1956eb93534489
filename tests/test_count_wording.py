"""Issue 40 item 10: a count and its noun agree wherever dbxdec prints one ("1 row", not
"1 rows"; "1 run", not "1 runs"), through the one helper that says it (``errors.counted``)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.states import ControlState
from databricks_bundle_decorators.launch.status.journal_status import JournalView, summary_line
from databricks_bundle_decorators.launch.status.status_grid import build_grid
from databricks_bundle_decorators.launch.status.status_view import fold_grid, folded_table
from databricks_bundle_decorators.runtime.checks.checking import QUARANTINED_METRIC, _passing_note
from databricks_bundle_decorators.runtime.checks.shipped import ROWS_METRIC, Expect, MinRowCount


def test_a_min_row_count_failure_of_one_row_says_row() -> None:
    assert MinRowCount(5).failure({ROWS_METRIC: 1}, "") == "1 row, expected at least 5"
    assert MinRowCount(5).failure({ROWS_METRIC: 0}, "") == "0 rows, expected at least 5"


def test_one_quarantined_row_says_row() -> None:
    check = Expect("amount > 0", on_fail="quarantine")
    assert _passing_note(check, {f"p.{QUARANTINED_METRIC}": 1}, "p.") == "1 row quarantined"
    assert _passing_note(check, {f"p.{QUARANTINED_METRIC}": 3}, "p.") == "3 rows quarantined"


def test_a_detached_backfill_of_one_run_says_run(tmp_path: Path) -> None:
    plan = BackfillPlan("nightly", (Slice(0, ("2024-01-01",)),))
    ledger = Ledger.create(
        tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions(), backfill_id="b1"
    )
    line = summary_line(JournalView(ledger, ControlState.RUNNING))
    assert line.endswith("1 pending of 1 run"), line


def test_a_folded_grid_of_one_key_says_key() -> None:
    grid = build_grid("h", "hourly", ["2024-01-01T00"], {})
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(folded_table(grid, fold_grid(grid, "day")))
    assert "h: 1 hourly key, one cell per day" in out.getvalue()
