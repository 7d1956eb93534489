"""Issue 25 item 6: a cancelled run's keys are ``cancelled`` -- in the ledger's history,
the workspace's history, the grid (text, JSON states, HTML) and the page's details --
and ``--rerun failed`` and catch-up run them again."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.launch.backends.databricks_backend import run_history
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_observations,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.history import (
    key_history,
    keys_without_success,
    select_keys,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.interrupts import CANCEL, Interrupts
from databricks_bundle_decorators.launch.status import status_view
from databricks_bundle_decorators.launch.status.status_grid import (
    NO_DETAILS,
    build_grid,
    grid_html,
    ledger_details,
    legend,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS
from .test_scheduler import EventSignals, day, in_background, make_ledger

DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")


def test_a_double_interrupt_leaves_cancelled_keys_not_failed(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.hold_runs = True
    keys = [day(i) for i in range(4)]
    ledger = make_ledger(root, keys)
    interrupts = Interrupts()
    signals = EventSignals()
    with in_background(
        emu, ledger, job_id, events=signals, interrupts=interrupts, max_concurrent=2
    ) as result:
        signals.wait("submitted", 2)
        interrupts.escalate(level=CANCEL)
        assert result.result(timeout=120) == "interrupted"

    saved = read_ledger(ledger.path)
    local = key_history(ledger_observations([saved]))
    assert local == {keys[0]: "cancelled", keys[1]: "cancelled"}
    remote = key_history(run_history(emu.workspace_client(), job_id, DAILY))
    assert remote == local  # the workspace's CANCELED result says the same

    grid = build_grid("nightly", "daily", keys, local, ledger_details([saved]))
    assert grid.counts() == {"cancelled": 2, "missing": 2}
    assert legend(grid).endswith("⊘ cancelled 2")
    page = grid_html(grid)
    assert NO_DETAILS not in page and "not launched" not in page
    assert re.search(rf'title="{keys[0]}: cancelled, run \d+: cancelled by the user"', page)
    cancelled = page[page.index("Cancelled keys (2)") :]
    assert "cancelled by the user" in cancelled and "Failed keys" not in page

    # not a success: --rerun failed and catch-up run them again; --rerun missing does not
    assert select_keys(keys, local, "failed") == keys[:2]
    assert keys_without_success(keys, local) == keys
    assert select_keys(keys, local, "missing") == keys[2:]


def _ranged_ledger(root: Path, state: str, error: str) -> Ledger:
    keys = tuple(f"2024-01-0{d}" for d in range(1, 6))
    plan = BackfillPlan("nightly", (Slice(0, keys),))
    ledger = Ledger.create(
        root, plan, backend=BackendSpec("local"), options=LaunchOptions(), backfill_id="b1"
    )
    attempt = Attempt(1, "t", state, "r-1", submitted_at=10.0, error=error)  # type: ignore[arg-type]
    ledger.update(ledger.slices[0].with_attempt(attempt))
    return ledger


def test_a_ranged_runs_keys_share_one_row_and_its_error_is_named_once(tmp_path: Path) -> None:
    error = "task 'load' failed for keys 2024-01-01..2024-01-05: AnalysisException"
    ledger = _ranged_ledger(tmp_path, "failed", error)
    keys = DAILY.keys("2024-01-01", "2024-01-07")
    grid = build_grid(
        "nightly",
        "daily",
        keys,
        key_history(ledger_observations([ledger])),
        ledger_details([ledger]),
    )
    for page in (grid_html(grid), status_view.status_page(grid)):
        failures = page[page.index("Failed keys (5") :]
        assert failures.count(html.escape(error)) == 1, failures
        assert "<td>2024-01-01..2024-01-05 (5 keys)</td><td>r-1</td>" in failures


def test_the_folded_page_lists_cancelled_keys_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(status_view, "PAGE_FULL_KEYS", 10)  # fold a year of daily keys
    ledger = _ranged_ledger(tmp_path, "cancelled", "cancelled by the user")
    history = key_history(ledger_observations([ledger]))
    grid = build_grid("nightly", "daily", DAILY.keys(), history, ledger_details([ledger]))
    page = status_view.status_page(grid)
    assert "A cell is one" in page  # folded
    assert "Cancelled keys (5, in 1 range)" in page and "Failed keys" not in page
