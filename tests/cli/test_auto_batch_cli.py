"""``dbxdec backfill --batch-size auto`` end to end against the emulator: the dry run
shows the size chosen from the job's past run durations and why; bad values of the
options are one line naming the option."""

from __future__ import annotations

import json
import re
from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.testing import JobsEmulator

from .clirun import NIGHTLY_PARAMS, Cli, assert_one_error_line

START, END = "2024-03-01", "2024-04-29"  # 60 keys


def seed_history(emu: JobsEmulator, job_id: int, *, one_key: float, three_keys: float) -> None:
    """Two past 1-key runs lasting ``one_key`` s and two 3-key runs lasting ``three_keys``."""
    client = emu.workspace_client()
    for first, last, seconds in (
        ("2024-01-01", "2024-01-01", one_key),
        ("2024-01-02", "2024-01-02", one_key),
        ("2024-01-03", "2024-01-05", three_keys),
        ("2024-01-06", "2024-01-08", three_keys),
    ):
        emu.set_outcome(last, duration=seconds)
        params = {"backfill_key": last}
        if first != last:
            params["backfill_start_key"] = first
        client.jobs.run_now(job_id, job_parameters=params)
    emu.wait_until_idle()


def dry_run_auto(dbxdec: Cli, *extra: str) -> tuple[int, str, str]:
    return dbxdec(
        "backfill", "nightly", "--start", START, "--end", END, "--batch-size", "auto",
        "--target-run-length", "1s", "--max-concurrent", "2", "--dry-run", *extra,
    )  # fmt: skip


def chosen_size(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("batch size auto: "))
    return int(line.split()[3])


def test_auto_dry_run_prints_the_size_and_its_reasoning(dbxdec: Cli, emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    seed_history(emu, job_id, one_key=0.3, three_keys=0.7)  # 0.1 s start-up + 0.2 s a key

    code, out, err = dry_run_auto(dbxdec)

    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("batch size auto: 4 keys per run")
    reasons = lines[at + 1 : at + 4]
    assert "least-squares fit to the last 4 successful runs (1-3 keys)" in reasons[0]
    assert re.fullmatch(
        r"  target run length 1\.0s: max\(1, floor\(\(1\.0s - 0\.\ds\) / 0\.2s\)\) = 4", reasons[1]
    )
    assert reasons[2].startswith("  expected run length ~")
    assert "Plan for nightly: 15 runs, 60 keys" in out
    assert "Dry run: nothing was launched." in out
    assert emu.requests["/api/2.2/jobs/run-now"] == 4  # the history; the dry run launched none

    code, out, _ = dry_run_auto(dbxdec, "--json")
    document = json.loads(out)
    assert document["batch_size"]["size"] == 4
    assert document["batch_size"]["model"]["basis"] == "fit"
    assert {len(run["keys"]) for run in document["runs"]} == {4}


def test_fast_history_chooses_larger_batches_than_slow_history(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    fast = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    slow = emu.create_job("nightly-slow", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    seed_history(emu, fast, one_key=0.03, three_keys=0.05)  # 0.02 s start-up + 0.01 s a key
    seed_history(emu, slow, one_key=0.3, three_keys=0.7)  # 0.1 s start-up + 0.2 s a key

    code, fast_out, _ = dry_run_auto(dbxdec, "--job-id", str(fast))
    assert code == 0
    code, slow_out, _ = dry_run_auto(dbxdec, "--job-id", str(slow))
    assert code == 0

    assert chosen_size(fast_out) == 30  # ~98 would fit in 1 s: capped at 60 keys // 2 at once
    assert "capped at 60 keys // 2 at once = 30, so every slot stays busy" in fast_out
    assert chosen_size(slow_out) == 4
    assert chosen_size(fast_out) > chosen_size(slow_out)


def test_without_history_auto_falls_back_to_one_key_and_says_why(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)

    code, out, _ = dry_run_auto(dbxdec)

    assert code == 0
    assert "batch size auto: 1 key per run" in out
    assert "no successful past runs of nightly to measure: 1 key per run until some end" in out


def test_bad_batch_size_and_target_values_name_the_option(dbxdec: Cli, emu: JobsEmulator) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS)

    code, _, err = dbxdec("backfill", "nightly", "--keys", START, "--batch-size", "often")
    assert code == 2
    assert assert_one_error_line(err).startswith(
        "Error: Invalid value for '--batch-size': 'often': expected a whole number of keys "
        "from 1, or auto"
    )

    code, _, err = dbxdec("catchup", "nightly", "--batch-size", "0", "--dry-run")
    assert code == 2
    assert "Invalid value for '--batch-size': 0: expected" in assert_one_error_line(err)

    code, _, err = dbxdec(
        "backfill", "nightly", "--keys", START, "--batch-size", "auto",
        "--target-run-length", "soon",
    )  # fmt: skip
    assert code == 2
    assert assert_one_error_line(err).startswith(
        "Error: Invalid value for '--target-run-length': 'soon': expected a positive duration "
        "such as 90s, 15m or 1h"
    )

    code, _, err = dbxdec("backfill", "nightly", "--keys", START, "--target-run-length", "5m")
    assert code == 2
    assert assert_one_error_line(err) == (
        "Error: --target-run-length is the aim of --batch-size auto: add it"
    )


def test_local_auto_dry_run_measures_the_local_ledgers(dbxdec: Cli, project: Path) -> None:
    slices = (Slice(0, ("2024-01-01",)), Slice(1, ("2024-01-02", "2024-01-03", "2024-01-04")))
    ledger = Ledger.create(
        project,
        BackfillPlan("nightly", slices),
        backend=BackendSpec("local"),
        options=LaunchOptions(),
    )
    for record, seconds in zip(ledger.slices, (40.0, 80.0), strict=True):
        done = Attempt(1, "t", "succeeded", submitted_at=1000.0, ended_at=1000.0 + seconds)
        ledger.update(record.with_attempt(done))
    ledger.set_state("succeeded")
    ledger.save()

    code, out, err = dbxdec(
        "backfill", "nightly", "--start", START, "--end", END, "--local", "--batch-size", "auto",
        "--dry-run",
    )  # fmt: skip

    assert code == 0, err
    assert chosen_size(out) == 44  # 20 s start-up + 20 s a key: floor((900 - 20) / 20)
    assert "least-squares fit to the last 2 successful runs (1-3 keys)" in out
    assert "Plan for nightly: 2 runs, 60 keys" in out
