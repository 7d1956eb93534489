"""Issue 40: a run failed by a check says which check and why in the backfill's summary
(the run's own error only names the task that failed, e.g. "Task summarise failed")."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.summary import summarize
from databricks_bundle_decorators.launch.status.progress import summary_lines


def test_the_failed_line_names_the_failed_check_and_its_detail(tmp_path: Path) -> None:
    plan = BackfillPlan("daily_orders", (Slice(0, ("2024-01-06",)),))
    ledger = Ledger.create(tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions())
    checks = (
        {"check": "min_row_count(1)", "passed": False, "detail": "0 rows, expected at least 1",
         "severity": "error"},
        {"check": "row_count_warn", "passed": False, "detail": "low", "severity": "warn"},
        {"check": "unique(order_date)", "passed": True, "detail": "", "severity": "error"},
    )  # fmt: skip
    attempt = Attempt(
        1, "t", "failed", "5006", error="FAILED: Task summarise failed", checks=checks
    )
    ledger.update(ledger.slices[0].with_attempt(attempt))
    (failed,) = summarize(ledger, 1.0).failed
    assert failed.reason == (
        "check min_row_count(1) failed: 0 rows, expected at least 1; FAILED: Task summarise failed"
    )
    assert any(
        "FAILED 2024-01-06: check min_row_count(1) failed: 0 rows" in line
        for line in summary_lines(summarize(ledger, 1.0))
    )


def test_a_cancelled_runs_message_is_in_dbxdecs_spelling() -> None:
    """The Jobs API says "canceled"; dbxdec's states and lines say "cancelled": one
    spelling per output (issue 40)."""
    from databricks.sdk.service.jobs import Run, RunLifeCycleState, RunResultState, RunState

    from databricks_bundle_decorators.launch.backends.databricks_backend import run_status

    state = RunState(
        life_cycle_state=RunLifeCycleState.TERMINATED,
        result_state=RunResultState.CANCELED,
        state_message="Run was canceled by user. Canceled at 12:00",
    )
    status = run_status(Run(state=state))
    assert (status.state, status.message) == (
        "cancelled",
        "Run was cancelled by user. Cancelled at 12:00",
    )
