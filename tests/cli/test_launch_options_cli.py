"""``dbxdec backfill`` / ``catchup`` options end to end against the emulator: --canary,
catch-up batches, and the errors of --keys, --param and options beside --resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import keys_of

from .clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line

DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]


def test_canary_2_with_the_second_failing_launches_nothing_else(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[1], result="FAILED", message="row count 0 below 1")

    code, _, err = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[9], "--canary", "2", *FAST
    )

    assert code == 1
    assert sorted(keys_of(emu, job_id)) == DAYS[:2]  # the two canaries, nothing else
    line = assert_one_error_line(err)
    assert line.startswith(f"Error: canary slice {DAYS[1]} failed: ")
    assert "row count 0 below 1" in line and "nothing else launched" in line
    assert "--resume nightly-" in line


def test_canary_passes_then_the_rest_run_once_each(dbxdec: Cli, emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)

    code, _, _ = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[5], "--canary", "2",
        "--max-concurrent", "4", *FAST,
    )  # fmt: skip

    assert code == 0
    runs = emu.runs(job_id)
    assert sorted(keys_of(emu, job_id)) == DAYS[:6]
    canaries = [r for r in runs if r.job_parameters["backfill_key"] in DAYS[:2]]
    last_end = max(r.ended for r in canaries if r.ended is not None)
    assert all(r.created >= last_end for r in runs if r not in canaries)


def test_catchup_batches_never_rerun_a_key_that_succeeded(dbxdec: Cli, emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    for day in (DAYS[2], DAYS[5], DAYS[6]):
        emu.set_outcome(day, result="FAILED")
    code, _, _ = dbxdec("backfill", "nightly", "--start", DAYS[0], "--end", DAYS[9], *FAST)
    assert code == 1
    for day in (DAYS[2], DAYS[5], DAYS[6]):
        emu.set_outcome(day, result="SUCCESS")
    before = len(emu.runs(job_id))

    code, out, _ = dbxdec(
        "catchup", "nightly", "--start", DAYS[0], "--end", DAYS[9], "--batch-size", "7", "--json",
        *FAST,
    )  # fmt: skip

    assert code == 0, out
    again = emu.runs(job_id)[before:]
    ranges = sorted(
        (r.job_parameters.get("backfill_start_key") or r.job_parameters["backfill_key"],
         r.job_parameters["backfill_key"])
        for r in again
    )  # fmt: skip
    assert ranges == [(DAYS[2], DAYS[2]), (DAYS[5], DAYS[6])]


def test_keys_and_param_errors_name_the_option(dbxdec: Cli, emu: JobsEmulator) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS)

    code, _, err = dbxdec("backfill", "nightly", "--keys", " , ", "--dry-run")
    assert code == 2
    assert_one_error_line(err).startswith("Error: Invalid value for '--keys': expected a comma")

    code, _, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--param", "oops", "--dry-run")
    assert code == 2
    assert assert_one_error_line(err).startswith(
        "Error: Invalid value for '--param': 'oops': expected NAME=VALUE"
    )


def test_param_values_keep_their_equals_signs(dbxdec: Cli, emu: JobsEmulator) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS)
    code, out, _ = dbxdec(
        "backfill", "nightly", "--keys", DAYS[0], "--param", "source=a=b", "--dry-run", "--json"
    )
    assert code == 0
    assert json.loads(out)["runs"][0]["parameters"]["source"] == "a=b"


def test_resume_names_the_plan_options_given_beside_it(dbxdec: Cli) -> None:
    code, _, err = dbxdec(
        "backfill", "--resume", "nightly-x", "--batch-size", "1", "--canary", "2", "--max-concurrent", "3"
    )  # fmt: skip
    assert code == 2
    line = assert_one_error_line(err)
    # --batch-size 1 is the default value, yet typed: it is named; pacing is allowed
    assert line.endswith("drop --batch-size, --canary")


def test_dry_run_says_where_runs_go_and_estimates_from_past_runs(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.default_duration = 0.3
    code, _, _ = dbxdec("backfill", "nightly", "--start", DAYS[0], "--end", DAYS[3], *FAST)
    assert code == 0
    sent = emu.requests["/api/2.2/jobs/run-now"]  # copies of a slow run-now included

    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[9], "--max-concurrent", "5",
        "--dry-run", "--new",
    )  # fmt: skip

    assert code == 0
    assert f"Runs would go to job 'nightly' (id {job_id}) on http" in out
    assert "up to 5 at once" in out
    estimate = next(line for line in out.splitlines() if line.startswith("estimate: "))
    assert "10 runs, 5 at once -> 2 rounds" in estimate
    assert "of the last 4 successful runs" in estimate

    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[9], "--max-concurrent", "5",
        "--dry-run", "--new", "--json", "--dbu-per-hour", "2",
    )  # fmt: skip
    document = json.loads(out)
    figures = document["estimate"]
    assert abs(figures["median_seconds"] - 0.3) < 0.05  # the API's start and end times
    assert abs(figures["wall_seconds"] - 2 * figures["median_seconds"]) < 1e-6
    assert emu.requests["/api/2.2/jobs/run-now"] == sent  # the dry run launched nothing


def test_a_dry_run_without_a_workspace_still_plans(
    dbxdec: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABRICKS_HOST")
    monkeypatch.delenv("DATABRICKS_TOKEN", raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", "/nonexistent")
    code, out, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--dry-run")
    assert code == 0, err
    assert "Plan for nightly: 1 run, 1 key" in out
    assert "Runs would go to job 'nightly' in the workspace of the default credentials" in out
    assert "Could not reach it: no usable Databricks credentials" in out
    assert "; no estimate." in out and "Dry run: nothing was launched." in out


def test_status_of_an_unknown_local_backfill_says_where_it_looked(
    dbxdec: Cli, project: Path
) -> None:
    """``--backfill ID`` without ``--html`` shows that backfill's keys (it used to need
    --html); with --local an id with no ledger here is named with the folder looked in."""
    code, _, err = dbxdec("status", "nightly", "--local", "--backfill", "nightly-x")
    assert code == 2
    assert assert_one_error_line(err) == (
        f"Error: no backfill 'nightly-x' in {project / '.dbxdec' / 'backfills'}. Without "
        "--local, the journal of a detached backfill is read from the workspace"
    )
