"""``dbxdec backfill --no-checks`` against the emulator: checks off in the order of every
run, in the rerun command and through ``--resume``; refused where it cannot work."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.backfill.wire import task_order
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator

from .clirun import FAST, NIGHTLY_PARAMS, Cli

PARAMS = {**NIGHTLY_PARAMS, "dbxdec_order": ""}


def test_no_checks_reaches_every_run_the_summary_the_rerun_command_and_resume(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-02", result="FAILED")
    args = ("backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-03")
    code, out, _ = dbxdec(*args, "--no-checks", *FAST)
    assert code == 1
    assert {task_order(r.job_parameters).checks for r in emu.runs(job_id)} == {False}
    assert "Checks: off (--no-checks)" in out
    rerun = next(line for line in out.splitlines() if line.startswith("Rerun the failed keys: "))
    assert "--no-checks" in rerun.split()
    (ledger,) = list_ledgers(project, "nightly")
    assert ledger.options.checks is False

    code, _, err = dbxdec("backfill", "--resume", ledger.id, "--no-checks")
    assert code == 2 and "drop --no-checks" in err
    emu.set_outcome("2024-01-02", result="SUCCESS")
    code, out, _ = dbxdec("backfill", "--resume", ledger.id, *FAST)
    assert code == 0, out
    assert task_order(emu.runs(job_id)[-1].job_parameters).checks is False

    # without the option the runs keep the job's default, on
    code, out, _ = dbxdec("backfill", "nightly", "--keys", "2024-01-05", *FAST)
    assert code == 0, out
    assert task_order(emu.runs(job_id)[-1].job_parameters).checks is True
    assert "Checks: off" not in out


def test_no_checks_is_refused_without_the_parameter_and_with_full_refresh(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, _, err = dbxdec("backfill", "nightly", "--keys", "2024-01-05", "--no-checks")
    assert code == 2
    assert "deployed without the dbxdec_order parameter" in err
    code, _, err = dbxdec(
        "backfill", "nightly", "--keys", "2024-01-05", "--no-checks", "--full-refresh"
    )
    assert code == 2
    assert err.startswith("Error: --full-refresh cannot be combined with --no-checks")
    assert emu.runs(job_id) == []
