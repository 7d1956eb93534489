"""Issue 25 item 7: keys written by ``dbxdec run --local`` are seen by ``status --local``
(and by catch-up, which reads the same history)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_observations,
)
from databricks_bundle_decorators.launch.plan.history import keys_without_success
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.status.local_runs import (
    LocalRun,
    local_runs,
    record_local_run,
    runs_dir,
    with_local_run_details,
)
from databricks_bundle_decorators.launch.status.observed import observed_history
from databricks_bundle_decorators.launch.status.status_grid import NO_DETAILS, ledger_details

from .clirun import Cli, write_run_project

DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")


@pytest.fixture
def run_project(tmp_path: Path) -> Path:
    return write_run_project(tmp_path / "proj")


@pytest.mark.spark
def test_status_local_shows_the_keys_of_dbxdec_run_local(
    spark: Any, run_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(run_project, capsys)
    code, _, err = dbxdec(
        "run", "cli_daily", "--start", "2024-08-01", "--end", "2024-08-02", "--local"
    )
    assert code == 0, err
    code, _, err = dbxdec(
        "run", "cli_daily", "--key", "2024-08-04", "-p", "shift_days=1", "--local"
    )
    assert code == 1

    span = ("--start", "2024-08-01", "--end", "2024-08-05")
    code, out, err = dbxdec("status", "cli_daily", "--local", "--json", *span)
    assert code == 0, err
    assert json.loads(out)["states"] == {
        "2024-08-01": "succeeded",
        "2024-08-02": "succeeded",
        "2024-08-03": "missing",
        "2024-08-04": "failed",
        "2024-08-05": "missing",
    }
    page = run_project / "status.html"
    code, _, err = dbxdec("status", "cli_daily", "--local", "--html", str(page), *span)
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    [failed] = [run for run in local_runs(run_project, "cli_daily") if run.state == "failed"]
    assert f"2024-08-04: failed, run {failed.run_id}: events:" in html
    assert NO_DETAILS not in html

    history = observed_history("cli_daily", DAILY, root=run_project)  # catch-up's history
    days = DAILY.keys("2024-08-01", "2024-08-05")
    assert keys_without_success(days, history) == ["2024-08-03", "2024-08-04", "2024-08-05"]


def test_a_later_backfill_run_wins_over_an_earlier_local_run_and_back(tmp_path: Path) -> None:
    plan = BackfillPlan("cli_daily", (Slice(0, ("2024-08-01",)),))
    ledger = Ledger.create(
        tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions(), backfill_id="b1"
    )
    attempt = Attempt(1, "t", "failed", "r-b", submitted_at=20.0, error="boom")
    ledger.update(ledger.slices[0].with_attempt(attempt))
    observed = ledger_observations([ledger])
    early = LocalRun("r-1", ("2024-08-01",), "succeeded", 10.0, 11.0)
    late = LocalRun("r-2", ("2024-08-01",), "cancelled", 30.0, 31.0, "interrupted")
    assert (
        with_local_run_details(ledger_details([ledger]), observed, [early])["2024-08-01"].run_id
        == "r-b"
    )
    details = with_local_run_details(ledger_details([ledger]), observed, [early, late])
    assert (details["2024-08-01"].run_id, details["2024-08-01"].state) == ("r-2", "cancelled")


def test_run_records_skip_damaged_files_and_refuse_unsafe_names(tmp_path: Path) -> None:
    run = LocalRun("20240801T000000-1a2b3c4d", ("2024-08-01",), "succeeded", 1.0, 2.0)
    record_local_run(tmp_path, "cli_daily", run)
    (runs_dir(tmp_path, "cli_daily") / "broken.json").write_text("{not json")
    assert local_runs(tmp_path, "cli_daily") == [run]
    with pytest.raises(ValueError, match="cannot name a local run record"):
        record_local_run(tmp_path, "../elsewhere", run)
