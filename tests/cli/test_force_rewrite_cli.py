"""``--force-rewrite``: ``dbxdec run`` on a local append-once Delta table, and ``dbxdec
backfill`` carrying it to every run, to the rerun command and through ``--resume``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import task_order
from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import read_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.runtime.pipelines import read_local, table_version

from .clirun import FAST, NIGHTLY_PARAMS, Cli, run_project

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _project_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dbxdec run --local`` records its runs in the project (.dbxdec/runs): a project in
    tmp_path with the same pipelines, so the tests write nothing into the repository."""
    monkeypatch.setattr(sys.modules[__name__], "REPO", run_project(tmp_path))


TABLE = "main.cli.history"


def run_locally(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(["run", *args, "--project", str(REPO), "--pipelines", "tests.cli.run_pipeline"])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.spark
def test_run_skips_a_written_key_and_force_rewrite_rewrites_it(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse = tmp_path / "wh"
    where = ("--local", "--warehouse", str(warehouse))
    code, _, err = run_locally(capsys, "cli_history", "--key", "2024-05-01", *where)
    assert code == 0, err
    assert table_version(spark, warehouse, TABLE) == 0

    code, out, err = run_locally(
        capsys, "cli_history", "--key", "2024-05-01", "-p", "per_day=1", *where
    )
    assert code == 0, err
    assert f"table {TABLE} already holds key 2024-05-01 (append-once); nothing was written" in out
    assert table_version(spark, warehouse, TABLE) == 0

    code, out, err = run_locally(
        capsys, "cli_history", "--key", "2024-05-01", "-p", "per_day=1", "--force-rewrite", *where
    )
    assert code == 0, err
    assert "already holds" not in out
    assert table_version(spark, warehouse, TABLE) == 1
    assert read_local(spark, warehouse, TABLE).count() == 1


def test_backfill_force_rewrite_reaches_every_run_the_rerun_command_and_resume(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    params = {**NIGHTLY_PARAMS, "dbxdec_order": ""}
    job_id = emu.create_job("nightly", parameters=params, max_concurrent_runs=10)
    emu.set_outcome("2024-01-02", result="FAILED")
    args = ("backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-03")
    code, out, _ = dbxdec(*args, "--force-rewrite", *FAST)
    assert code == 1
    assert {task_order(r.job_parameters).force_rewrite for r in emu.runs(job_id)} == {True}
    rerun = next(line for line in out.splitlines() if line.startswith("Rerun the failed keys: "))
    assert "--force-rewrite" in rerun.split()

    backfill_id = next(p.stem for p in (project / ".dbxdec" / "backfills").glob("*.sqlite"))
    code, _, err = dbxdec("backfill", "--resume", backfill_id, "--force-rewrite")
    assert code == 2 and "drop --force-rewrite" in err
    emu.set_outcome("2024-01-02", result="SUCCESS")
    code, out, _ = dbxdec("backfill", "--resume", backfill_id, *FAST)
    assert code == 0, out
    resumed = emu.runs(job_id)[-1]
    assert task_order(resumed.job_parameters).force_rewrite is True

    # without the option the runs keep the job's default
    code, out, _ = dbxdec("backfill", "nightly", "--keys", "2024-01-05", *FAST)
    assert code == 0, out
    assert task_order(emu.runs(job_id)[-1].job_parameters).force_rewrite is False


def test_force_rewrite_is_refused_for_a_job_deployed_without_the_parameter(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, _, err = dbxdec("backfill", "nightly", "--keys", "2024-01-05", "--force-rewrite")
    assert code == 2
    assert err == (
        f"Error: job 'nightly' (id {job_id}) was deployed without the dbxdec_order "
        "parameter (by an older dbxdec): deploy it again (dbxdec deploy) to --force-rewrite; "
        "nothing was launched\n"
    )
    assert emu.runs(job_id) == []


def test_the_ledger_keeps_force_rewrite(dbxdec: Cli, emu: JobsEmulator, project: Path) -> None:
    params = {**NIGHTLY_PARAMS, "dbxdec_order": ""}
    emu.create_job("nightly", parameters=params, max_concurrent_runs=10)
    code, out, _ = dbxdec("backfill", "nightly", "--keys", "2024-01-07", "--force-rewrite", *FAST)
    assert code == 0, out
    path = next((project / ".dbxdec" / "backfills").glob("*.sqlite"))
    assert read_ledger(path).options.force_rewrite is True
