"""Issue 40 item 1: ``--local`` reads the local ledgers only. A ``-t dev`` backfill (on a
workspace, or on ``dbxdec emulator`` writing the same local warehouse) keeps its ledger in
``.dbxdec/backfills/`` too; it never shows under local headings, and local reruns and
catch-up never plan from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    list_ledgers,
)
from databricks_bundle_decorators.launch.plan.history import keys_without_success, select_keys
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.status.observed import observed_history

from .clirun import Cli, write_run_project

DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
DAYS = ("--start", "2024-08-01", "--end", "2024-08-03")
LOCAL_ID, DEV_ID = "cli_daily-20260801T000000-0a0a", "cli_daily-20260802T000000-0b0b"


def _ledger(root: Path, backfill_id: str, backend: BackendSpec, key: str, state: str) -> Ledger:
    plan = BackfillPlan("cli_daily", (Slice(0, (key,)),))
    ledger = Ledger.create(
        root, plan, backend=backend, options=LaunchOptions(), backfill_id=backfill_id
    )
    error = "check min_row_count(1) failed" if state == "failed" else ""
    attempt = Attempt(1, "t", state, "501", submitted_at=20.0, ended_at=21.0, error=error)
    ledger.update(ledger.slices[0].with_attempt(attempt))
    ledger.set_state(state)  # type: ignore[arg-type]
    ledger.save()
    return ledger


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_run_project(tmp_path / "proj")
    _ledger(root, LOCAL_ID, BackendSpec("local"), "2024-08-01", "succeeded")
    workspace = BackendSpec("databricks", job_id=1001, remote_name="[dev you] cli_daily")
    _ledger(root, DEV_ID, workspace, "2024-08-02", "failed")
    return root


def test_status_local_and_its_page_leave_out_a_workspace_backfill(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    code, out, err = dbxdec("status", "cli_daily", "--local", "--json", *DAYS)
    assert code == 0, err
    assert json.loads(out)["states"] == {
        "2024-08-01": "succeeded",
        "2024-08-02": "missing",  # failed on the workspace: not a local run
        "2024-08-03": "missing",
    }
    page = project / "status.html"
    code, _, err = dbxdec("status", "cli_daily", "--local", "--html", str(page), *DAYS)
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert LOCAL_ID in html
    assert DEV_ID not in html
    # the backfills list shows both, each with its backend
    assert {ledger.id for ledger in list_ledgers(project, "cli_daily")} == {LOCAL_ID, DEV_ID}


def test_local_reruns_and_catch_up_plan_from_local_runs_only(project: Path) -> None:
    history = observed_history("cli_daily", DAILY, root=project)
    days = DAILY.keys("2024-08-01", "2024-08-03")
    assert select_keys(days, history, "failed") == []  # the failed key failed on the workspace
    assert keys_without_success(days, history) == ["2024-08-02", "2024-08-03"]
    assert [ledger.id for ledger in list_ledgers(project, backend="local")] == [LOCAL_ID]
