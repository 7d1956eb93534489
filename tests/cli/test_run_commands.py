"""``dbxdec run``: a thin command over the local runner."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from tests.cli.clirun import run_project

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _project_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dbxdec run --local`` records its runs in the project (.dbxdec/runs): a project in
    tmp_path with the same pipelines, so the tests write nothing into the repository."""
    monkeypatch.setattr(sys.modules[__name__], "REPO", run_project(tmp_path))


def dbxdec(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(["run", *args, "--project", str(REPO), "--pipelines", "tests.cli.run_pipeline"])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.spark
def test_local_run_prints_each_task(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys,
        "cli_daily",
        "--start",
        "2024-08-01",
        "--end",
        "2024-08-02",
        "--local",
        "--warehouse",
        str(tmp_path / "wh"),
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Running cli_daily locally (tables under {tmp_path / 'wh'})"
    assert [line.split()[:2] for line in lines[1:3]] == [["events", "ok"], ["count", "ok"]]
    assert lines[-1].startswith("Run ") and lines[-1].endswith(
        "succeeded for keys 2024-08-01..2024-08-02."
    )
    assert (tmp_path / "wh/main/cli/events/day=2024-08-02").is_dir()


@pytest.mark.spark
def test_failed_task_exits_1_naming_task_and_key(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys,
        "cli_daily",
        "--key",
        "2024-08-05",
        "-p",
        "shift_days=1",
        "--local",
        "--warehouse",
        str(tmp_path / "wh"),
    )
    assert code == 1
    assert "events" in out and "FAILED" in out and "skipped" in out
    assert err.startswith("Error: task 'events' failed for key 2024-08-05: task 'events': 3 rows")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["cli_daily", "--key", "2024-01-01"],
            "Error: dbxdec run executes on the local Spark only: add --local.",
        ),
        (
            ["cli_daily", "--start", "2024-01-01", "--local"],
            "Error: a ranged run needs both --start and --end (missing --end)",
        ),
        (
            ["cli_daily", "--key", "a", "--start", "b", "--end", "c", "--local"],
            "Error: use either --key K or --start A --end B, not both",
        ),
        (
            ["cli_daily", "-p", "oops", "--local"],
            "Error: Invalid value for '--param' / '-p': 'oops': expected NAME=VALUE",
        ),
        (
            ["cli_dayly", "--key", "2024-01-01", "--local"],
            "Error: unknown job 'cli_dayly'. Did you mean 'cli_daily'?",
        ),
        (
            ["cli_daily", "--key", "2024-13-01", "--local"],
            "Error: job 'cli_daily': backfill_key '2024-13-01' is not a valid daily key",
        ),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str, tmp_path: Path
) -> None:
    code, _, err = dbxdec(capsys, *args, "--warehouse", str(tmp_path / "wh"))
    assert code == 2
    assert err.startswith(message), err
    assert not (tmp_path / "wh").exists()


def test_help_explains_local_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "dbxdec run sales_pipeline --start 2024-01-01 --end 2024-01-31 --local" in out
    assert "--task TASK" in out and "--exact" in out
