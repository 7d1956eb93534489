"""``dbxdec backfill --dry-run`` and ``dbxdec status`` over many hourly keys, in-process
against a local project: a large plan is summarised (``--all-runs`` and ``--json`` list
every run) and a grid that would not fit folds, saying what a cell is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill import HourlyBackfill
from databricks_bundle_decorators.cli.output.plan_output import FULL_PLAN_RUNS
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
)
from tests.bundle.projects import make_project
from tests.cli.clirun import run

HOURLY_PIPELINE = """\
from databricks_bundle_decorators import HourlyBackfill, job, task


@job(name="JOBPREFIX_hourly", backfill=HourlyBackfill(start_date="2024-01-01T00", tz="UTC"))
def hourly():
    @task
    def load():
        ...

    load()
"""


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "project"
    return root, make_project(root, HOURLY_PIPELINE).job("hourly")


def _dry(root: Path, job: str, end: str, *extra: str) -> list[str]:
    return [
        "backfill", job, "--start", "2024-01-01T00", "--end", end, "--local", "--dry-run",
        *extra, "--project", str(root),
    ]  # fmt: skip


def test_a_large_dry_run_is_summarised(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, job = project
    code, out, err = run(_dry(root, job, "2024-01-31T23"), capsys)  # 744 runs
    assert (code, err) == (0, "")
    assert "Keys: 744 in 1 contiguous span: 2024-01-01T00..2024-01-31T23 (744)" in out
    assert f"Plan for {job}: 744 runs, 744 keys (the first and last 5" in out
    assert "734 more runs" in out
    for shown in ("2024-01-01T04", "2024-01-31T19"):  # the 5th run, the 5th from the end
        assert shown in out
    assert "2024-01-01T05" not in out and "2024-01-31T18" not in out
    assert "Runs would go to the embedded local Spark" in out
    assert out.rstrip().endswith("Dry run: nothing was launched.")
    assert len(out.splitlines()) < 40


def test_all_runs_lists_every_run(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, job = project
    code, out, _ = run(_dry(root, job, "2024-01-03T23", "--all-runs"), capsys)
    assert code == 0
    assert "Keys:" not in out
    assert all(f"2024-01-02T{h:02d}" in out for h in range(24))


def test_a_small_dry_run_lists_every_run_as_before(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, job = project
    assert FULL_PLAN_RUNS >= 26
    code, out, _ = run(_dry(root, job, "2024-01-02T01"), capsys)  # 26 runs
    assert code == 0
    assert "Keys:" not in out and "more runs" not in out
    assert "2024-01-01T12" in out


def test_the_json_of_a_large_dry_run_lists_every_run(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, job = project
    code, out, _ = run(_dry(root, job, "2024-01-31T23", "--json"), capsys)
    assert code == 0
    document = json.loads(out)
    assert document["job"] == job and document["dry_run"] is True
    assert len(document["runs"]) == 744
    assert document["runs"][-1]["keys"] == ["2024-01-31T23"]
    assert document["runs"][0]["parameters"]["backfill_key"] == "2024-01-01T00"


def test_status_of_a_year_of_hourly_keys_folds_into_days(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root, job = project
    page = tmp_path / "status.html"
    argv = [
        "status", job, "--local", "--start", "2024-01-01T00", "--end", "2024-12-31T23",
        "--html", str(page), "--project", str(root),
    ]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert (code, err) == (0, "")
    assert "one cell per" in out
    assert "A cell is one" in out and "8784 keys in" in " ".join(out.split())
    assert len(out.splitlines()) < 70
    text = page.read_text(encoding="utf-8")
    assert text.count("<details>") == 12 and "<script" not in text


def test_a_large_rerun_says_what_it_skipped_and_why(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, job = project
    keys = HourlyBackfill("2024-01-01T00", "2024-01-31T23", tz="UTC").keys()
    slices = [
        SliceRecord(i, (key,), {}, (Attempt(1, f"t{i}", "failed" if i % 5 == 0 else "succeeded"),))
        for i, key in enumerate(keys)
    ]
    ledger = Ledger(
        ledger_dir(root) / "earlier.sqlite",
        backfill_id="earlier",
        job=job,
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=slices,
        state="failed",
    )
    ledger.save()
    ledger.close()
    code, out, err = run(_dry(root, job, "2024-01-31T23", "--rerun", "failed"), capsys)
    assert (code, err) == (0, "")
    assert "Keys: 149 in 149 contiguous spans: 2024-01-01T00 (1), 2024-01-01T05 (1)" in out
    assert (
        "Skipped: 595 of 744 selected keys (--rerun failed: only keys whose latest run failed)"
        in out
    )
