"""Typing the command of a backfill that did not finish again: refused with its
``--resume`` command (``--new`` starts over), end to end in-process against the Jobs API
emulator; nothing is launched and no ledger is written by the refusal."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir, load_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, NIGHTLY_PARAMS, Cli
from tests.cli.test_refusals_cli import backfill_id
from tests.launch.conftest import keys_of

RUN_NOW = "/api/2.2/jobs/run-now"
DAYS = [f"2024-01-0{d}" for d in range(1, 5)]
COMMAND = ("backfill", "nightly", "--keys", ",".join(DAYS), "--max-concurrent", "1", *FAST)


def ledgers(project: Path) -> set[str]:
    return {p.stem for p in ledger_dir(project).glob("*.sqlite")}


def halted_backfill(dbxdec: Cli, emu: JobsEmulator) -> str:
    """A backfill of ``DAYS`` stopped after its first submission was refused: one slice
    failed, three never launched."""
    emu.inject_fault(RUN_NOW, status=403)
    # The fault is scripted for one request: a slow run-now is never sent again here (a
    # copy would be answered and make the run); resending is tested in test_overtake.
    code, out, _ = dbxdec(*COMMAND, "--resend-after", "0")
    assert code == 1
    return backfill_id(out)


def test_the_same_command_after_a_halt_is_refused_with_the_resume_command(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    halted = halted_backfill(dbxdec, emu)
    sent = emu.requests[RUN_NOW]

    code, out, err = dbxdec(*COMMAND)

    assert code == 2 and out == ""
    assert err == (
        f"Error: backfill {halted} of the same keys ended with runs failed or not run with 0 "
        f"of 4 runs succeeded: finish it with: dbxdec backfill --project {project} --resume "
        f"{halted} (or pass --new to run every key again)\n"
    )
    assert ledgers(project) == {halted} and emu.requests[RUN_NOW] == sent

    code, _, err = dbxdec("backfill", "--resume", halted, *FAST)
    assert code == 0, err
    assert sorted(keys_of(emu, job_id)) == DAYS  # resume ran each key once


def test_new_starts_over_and_the_rerun_of_an_all_failed_backfill_is_not_refused(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    halted = halted_backfill(dbxdec, emu)

    code, out, err = dbxdec(*COMMAND, "--new")

    assert code == 0, err
    assert ledgers(project) == {halted, backfill_id(out)}
    assert sorted(keys_of(emu, job_id)) == DAYS

    for day in DAYS:
        emu.set_outcome(day, result="FAILED", message="table locked")
    code, out, err = dbxdec(*COMMAND)
    assert code == 1 and err.startswith("Error: 4 of 4 runs failed")
    code, out, err = dbxdec(*COMMAND)  # what its summary says to run: every key failed
    assert code == 1 and err.startswith("Error: 4 of 4 runs failed")


def test_a_killed_backfill_is_pointed_at_and_dry_runs_and_history_selections_pass(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    halted = halted_backfill(dbxdec, emu)
    ledger = load_ledger(project, halted)
    ledger.set_state("running")  # as a launcher killed with SIGKILL leaves it
    ledger.save()
    ledger.close()

    code, _, err = dbxdec(*COMMAND)

    assert code == 2
    assert f"backfill {halted} of the same keys did not finish (its launcher stopped, or " in err
    assert f"--resume {halted} (or pass --new" in err
    code, out, _ = dbxdec(*COMMAND, "--dry-run")
    assert code == 0 and "Dry run: nothing was launched." in out
    code, _, err = dbxdec(*COMMAND, "--rerun", "missing")  # history picks the keys
    assert code == 0, err
