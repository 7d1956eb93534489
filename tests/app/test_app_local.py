"""The app with the local ledgers only (``dbxdec app --local``): a local backfill's page
shows its checks' verdicts and failures (no run page: it ran here), and every action is
disabled with the reason, since a local backfill is steered from its terminal."""

from __future__ import annotations

import time
from pathlib import Path

from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from tests.launch.conftest import write_project

from .appserver import Browserless, serving

DAYS = ("2024-03-01", "2024-03-02", "2024-03-03")


def local_ledger(root: Path) -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (day,)) for i, day in enumerate(DAYS)))
    ledger = Ledger.create(
        root, plan, backend=BackendSpec("local"), options=LaunchOptions(), started_by="dana"
    )
    now = time.time()
    verdicts = {
        DAYS[0]: CheckResult("min_row_count(10)", DAYS[0], 42.0, ">= 10", True, "step", "local-1"),
        DAYS[1]: CheckResult("min_row_count(10)", DAYS[1], 3.0, ">= 10", False, "step", "local-2"),
    }
    for record in ledger.slices:
        key = record.keys[0]
        if key not in verdicts:
            continue
        passed = verdicts[key].passed
        attempt = Attempt(
            1,
            f"t-{key}",
            "succeeded" if passed else "failed",
            f"local-{record.index + 1}",
            submitted_at=now,
            ended_at=now + 1,
            error="" if passed else "check min_row_count(10) failed: 3 rows\nTraceback ...",
            checks=(verdicts[key].to_json(),),
        )
        ledger.update(record.with_attempt(attempt))
    ledger.save()
    return ledger


def test_a_local_backfill_shows_checks_and_failures_and_offers_no_action(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project", "app_local_pipelines")
    ledger = local_ledger(root)
    with serving(AppSettings(root=root)) as url:
        app = Browserless(url)
        listing = app.get("/")
        page = app.get(f"/backfills/{ledger.id}")
    row = listing.body[listing.body.index(f'data-id="{ledger.id}"') :].split("</tr>")[0]
    assert "dana" in row and "1 ok, 1 failed of 3" in row and ">local<" in row
    assert '<a href="/jobs/nightly">nightly</a>' in row
    assert page.status == 200 and 'id="read-only"' not in page.body
    checks = page.body[page.body.index('id="checks"') :].split("</table>")[0]
    assert "step: min_row_count(10)" in checks and "3 (needs &gt;= 10)" in checks
    assert checks.count('class="error">failed') == 1 and checks.count('class="ok">passed') == 1
    failures = page.body[page.body.index('id="failures"') :].split("</table>")[0]
    assert "check min_row_count(10) failed: 3 rows" in failures and "Traceback" not in failures
    assert "run-link" not in failures  # it ran on this machine: no run page
    for action in ("pause", "unpause", "cancel", "resume", "undo"):
        assert (
            f'title="a local backfill: steer it from its terminal" data-action="{action}"'
            in page.body
        )
    assert f"dbxdec backfill --resume {ledger.id}\n" in page.body
    assert "data-live" in page.body  # still running: the page follows it
