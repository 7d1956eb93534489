"""``dbxdec status JOB --overdue [--json]`` on the local ledgers, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

from .clirun import Cli, assert_one_error_line

PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, Deadline, job, task

@task
def load() -> None:
    pass

@job(backfill=DailyBackfill("2024-03-25", "2024-03-28", tz="Europe/Amsterdam"),
     deadline=Deadline("09:00"))
def late_cli() -> None:
    load()

@job(backfill=DailyBackfill("2024-03-25", "2024-03-28"))
def relaxed_cli() -> None:
    load()
"""


@pytest.fixture
def dbxdec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    module = f"overdue_cli_{tmp_path.name.replace('-', '_')}"
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "od"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{module}"]\n'
    )
    (tmp_path / f"{module}.py").write_text(PIPELINES)
    plan = BackfillPlan("late_cli", (Slice(0, ("2024-03-25",)), Slice(1, ("2024-03-26",))))
    ledger = Ledger.create(tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions())
    failing = CheckResult("unique(id)", "2024-03-26", 2.0, "= 0", False, "load", "r2")
    ledger.update(
        ledger.slices[0].with_attempt(Attempt(1, "a", "succeeded", "r1", submitted_at=1.0))
    )
    ledger.update(
        ledger.slices[1].with_attempt(
            Attempt(1, "b", "failed", "r2", submitted_at=2.0, error="check failed",
                    checks=(failing.to_json(),))
        )
    )  # fmt: skip
    ledger.save()
    ledger.close()
    return Cli(tmp_path, capsys)


def test_overdue_lists_each_key_with_its_reason(dbxdec: Cli) -> None:
    code, out, err = dbxdec("status", "late_cli", "--overdue", "--local")
    assert code == 0, err
    assert out.splitlines() == [
        "3 overdue keys of late_cli (deadline 09:00 Europe/Amsterdam):",
        "  2024-03-26  due 2024-03-27 09:00 CET  checks failed: unique(id)",
        "  2024-03-27  due 2024-03-28 09:00 CET  no run",
        "  2024-03-28  due 2024-03-29 09:00 CET  no run",
    ]
    code, out, err = dbxdec("status", "late_cli", "--overdue", "--local", "--json",
                            "--start", "2024-03-28")  # fmt: skip
    assert code == 0, err
    body = json.loads(out)
    assert body["job"] == "late_cli"
    assert body["overdue"] == [
        {"key": "2024-03-28", "due": "2024-03-29T08:00:00+00:00", "state": "missing",
         "reason": "no run", "detail": "", "run_id": ""}
    ]  # fmt: skip


def test_overdue_refusals_are_one_line(dbxdec: Cli) -> None:
    code, _, err = dbxdec("status", "relaxed_cli", "--overdue", "--local")
    assert code == 2
    assert "job 'relaxed_cli' has no deadline" in assert_one_error_line(err)
    code, _, err = dbxdec("status", "late_cli", "--overdue", "--local", "--html", "x.html")
    assert code == 2
    assert "--overdue lists keys" in assert_one_error_line(err)
