"""``--local``: the same scheduler, ledger and progress on the embedded Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers

from .conftest import write_project

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def dbxdec(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--project", str(project)])
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_local_backfill_records_failures_and_resume_reruns_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = write_project(tmp_path / "proj")
    code, out, err = dbxdec(
        capsys,
        project,
        "backfill",
        "flaky",
        "--local",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-03",
        "--max-concurrent",
        "2",
        "--poll-interval",
        "0.05",
    )
    assert code == 1, out + err
    assert "FAILED 2024-01-02:" in out and "bad day" in out
    assert "--keys 2024-01-02 --local" in out
    (ledger,) = list_ledgers(project)
    assert ledger.backend.kind == "local"
    assert [r.state for r in ledger.slices] == ["succeeded", "failed", "succeeded"]

    code, out, _ = dbxdec(
        capsys,
        project,
        "status",
        "flaky",
        "--local",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-04",
        "--json",
    )
    assert json.loads(out)["states"] == {
        "2024-01-01": "succeeded",
        "2024-01-02": "failed",
        "2024-01-03": "succeeded",
        "2024-01-04": "missing",
    }
    code, out, _ = dbxdec(
        capsys,
        project,
        "backfill",
        "flaky",
        "--local",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-05",
        "--rerun",
        "missing",
        "--dry-run",
        "--json",
    )
    assert [k for run in json.loads(out)["runs"] for k in run["keys"]] == [
        "2024-01-04",
        "2024-01-05",
    ]

    code, out, _ = dbxdec(
        capsys, project, "backfill", "--resume", ledger.id, "--poll-interval", "0.05", "--json"
    )
    assert code == 1  # the same key fails again, and only that key was rerun
    summary = json.loads(out.splitlines()[-1])
    assert [f["keys"] for f in summary["failed"]] == [["2024-01-02"]]
    (resumed,) = list_ledgers(project)
    assert [len(r.attempts) for r in resumed.slices] == [1, 2, 1]
