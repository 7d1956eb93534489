"""``dbxdec backfill / catchup / backfills / status`` end to end, in-process, against the
Jobs API emulator through the real WorkspaceClient."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import keys_of

from .clirun import FAST, NIGHTLY_PARAMS, Cli


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["backfill", "nightli", "--start", "2024-01-01"],
            "unknown job 'nightli'. Did you mean 'nightly'?",
        ),
        (
            ["backfill", "nightly", "--start", "2024-02-01", "--end", "2024-01-01"],
            "start '2024-02-01' is after end '2024-01-01'",
        ),
        (
            ["backfill", "nightly", "--keys", "2024-01-01,2025-06-01"],
            "key '2025-06-01' is after the backfill's end_date '2024-12-31'",
        ),
        (
            ["backfill", "nightly", "--start", "2023-12-01"],
            "start '2023-12-01' is before the backfill's start_date",
        ),
        (
            ["backfill", "nightly", "--keys", "2024-1-5"],
            "key '2024-1-5' is not a valid daily key: expected YYYY-MM-DD",
        ),
        (["backfill", "regions", "--keys", "eu,mars"], "key 'mars' is not a declared static key"),
        (
            ["backfill", "--resume", "nightly-20240101T000000-dead"],
            "no backfill 'nightly-20240101T000000-dead'",
        ),
        (["backfill", "--resume", "../../etc/passwd"], "is not a backfill id"),
        (["backfill", "plain", "--start", "2024-01-01"], "job 'plain' has no backfill definition"),
        (
            ["backfill", "nightly", "--param", "sourc=1", "--keys", "2024-01-01"],
            "Did you mean 'source'?",
        ),
        (
            ["backfill", "nightly", "--keys", "2024-01-01", "--job-id", "4242"],
            "--job-id 4242: no such job",
        ),
        (["backfill", "nightly", "--keys", "2024-01-01"], "no deployed job named 'nightly'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(dbxdec: Cli, args: list[str], expected: str) -> None:
    code, out, err = dbxdec(*args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("Error: ") and expected in err
    assert "Traceback" not in out + err


def test_no_credentials_is_a_usage_error(dbxdec: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABRICKS_HOST")
    monkeypatch.delenv("DATABRICKS_TOKEN")
    code, _, err = dbxdec("backfill", "nightly", "--keys", "2024-01-01")
    assert code == 2
    assert err.startswith("Error: no usable Databricks credentials") and err.count("\n") == 1
    assert "--local" in err


def test_backfill_succeeds_with_one_run_per_key(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, out, _ = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-09",
        "--param",
        "source=y",
        *FAST,
    )
    assert code == 0, out
    assert sorted(keys_of(emu, job_id)) == [f"2024-01-0{d}" for d in range(1, 10)]
    assert all(r.job_parameters["source"] == "y" for r in emu.runs(job_id))
    assert "succeeded - 9 succeeded, 0 failed" in out
    ledgers = list((project / ".dbxdec" / "backfills").glob("*.sqlite"))
    assert len(ledgers) == 1 and b"dapi-test" not in ledgers[0].read_bytes()


def test_permanent_failure_exits_1_with_the_rerun_command(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-03", result="FAILED", message="table locked")
    emu.set_outcome("2024-01-05", result="FAILED", message="table locked")

    code, out, err = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-06",
        "--retries",
        "1",
        *FAST,
    )

    assert code == 1
    # the error once, in its progress line; the summary points at it (issue 25)
    assert "FAILED 2024-01-03: the error above" in out and "- table locked; retries spent" in out
    assert err == "Error: 2 of 6 runs failed; run the command above to finish\n"
    assert "Resume this backfill" not in out  # one next command (issue 25 item 10)
    rerun = next(line for line in out.splitlines() if line.startswith("Rerun the failed keys: "))
    command = rerun.removeprefix("Rerun the failed keys: ").split()
    assert command[:3] == ["dbxdec", "backfill", "nightly"]
    assert command[command.index("--keys") + 1] == "2024-01-03,2024-01-05"
    assert len(emu.runs(job_id)) == 6 + 2  # one retry each for the two failures

    emu.set_outcome("2024-01-03", result="SUCCESS")
    emu.set_outcome("2024-01-05", result="SUCCESS")
    at = command.index("--project")
    assert command[at + 1] == str(project)
    code, out, _ = dbxdec(*command[1:at], *command[at + 2 :], *FAST)
    assert code == 0, out
    # the two reruns run concurrently: their arrival order is not part of the contract
    assert sorted(keys_of(emu, job_id)[-2:]) == ["2024-01-03", "2024-01-05"]


def test_rerun_failed_and_missing_pick_keys_from_run_history(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-02", fail_attempts=1)  # fails first, succeeds when rerun
    emu.set_outcome("2024-01-04", result="FAILED")
    code, _, _ = dbxdec(
        "backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-05", *FAST
    )
    assert code == 1

    def planned(*extra: str) -> list[str]:
        code, out, err = dbxdec(
            "backfill",
            "nightly",
            "--start",
            "2024-01-01",
            "--end",
            "2024-01-08",
            "--dry-run",
            "--json",
            *extra,
        )
        assert code == 0, err
        return [k for run in json.loads(out)["runs"] for k in run["keys"]]

    assert planned("--rerun", "failed") == ["2024-01-02", "2024-01-04"]
    assert planned("--rerun", "missing") == ["2024-01-06", "2024-01-07", "2024-01-08"]
    assert planned() == [f"2024-01-0{d}" for d in range(1, 9)]

    code, _, _ = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-05",
        "--rerun",
        "failed",
        *FAST,
    )
    assert code == 1  # 2024-01-02 now succeeds, 2024-01-04 still fails
    assert planned("--rerun", "failed") == ["2024-01-04"]
    code, out, _ = dbxdec(
        "catchup", "nightly", "--start", "2024-01-01", "--end", "2024-01-07", "--dry-run", "--json"
    )
    assert [k for run in json.loads(out)["runs"] for k in run["keys"]] == [
        "2024-01-04",
        "2024-01-06",
        "2024-01-07",
    ]


def test_dry_run_prints_the_plan_and_launches_nothing(
    dbxdec: Cli, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide enough for every run's parameters
    code, out, _ = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-10",
        "--batch-size",
        "4",
        "--order",
        "reverse",
        "--exact",
        "--dry-run",
    )
    assert code == 0
    assert "3 runs, 10 keys" in out and "Dry run: nothing was launched." in out
    assert out.index("2024-01-09..2024-01-10") < out.index("2024-01-01..2024-01-04")
    assert "backfill_start_key=2024-01-05" in out and "backfill_exact=true" in out
    assert emu.requests["/api/2.2/jobs/run-now"] == 0


def test_ranged_runs_carry_start_and_end_keys(dbxdec: Cli, emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, _, _ = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-07",
        "--batch-size",
        "3",
        *FAST,
    )
    assert code == 0
    ranges = sorted(
        (r.job_parameters["backfill_start_key"], r.job_parameters["backfill_key"])
        for r in emu.runs(job_id)
    )
    assert ranges == [
        ("", "2024-01-07"),
        ("2024-01-01", "2024-01-03"),
        ("2024-01-04", "2024-01-06"),
    ]


def test_json_prints_one_object_per_event_and_a_summary(dbxdec: Cli, emu: JobsEmulator) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, out, _ = dbxdec("backfill", "nightly", "--keys", "2024-03-01,2024-03-02", "--json", *FAST)
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events].count("submitted") == 2
    assert [e["event"] for e in events].count("succeeded") == 2
    summary = events[-1]
    assert summary["event"] == "summary" and summary["exit_code"] == 0
    assert summary["counts"] == {"total": 2, "done": 2, "failed": 0, "running": 0, "remaining": 0}


def test_max_concurrent_above_the_job_limit_without_queue_is_lowered(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job(
        "nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=2, queue=False
    )
    code, out, _ = dbxdec(
        "backfill",
        "nightly",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-08",
        "--max-concurrent",
        "6",
        *FAST,
    )
    assert code == 0, out
    assert "allows only 2 concurrent runs and queueing is off" in out
    assert all(r.result_state == "SUCCESS" for r in emu.runs(job_id))  # none skipped


def test_target_resolves_the_development_name_prefix(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    (project / "databricks.yml").write_text(
        "bundle:\n  name: x\ntargets:\n  dev:\n    mode: development\n  prod:\n    mode: production\n"
    )
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)  # prod's
    dev_id = emu.create_job(
        "[dev emulator] nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10
    )
    code, _, err = dbxdec("backfill", "nightly", "--keys", "2024-01-01", "-t", "dev", *FAST)
    assert code == 0, err
    assert keys_of(emu, dev_id) == ["2024-01-01"]
    code, _, err = dbxdec("backfill", "nightly", "--keys", "2024-01-01", "-t", "staging")
    assert code == 2 and "-t staging: no such target" in err


def test_resume_finishes_what_is_left(dbxdec: Cli, emu: JobsEmulator, project: Path) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-02", result="FAILED")
    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-04", *FAST
    )
    assert code == 1
    backfill_id = next(p.stem for p in (project / ".dbxdec" / "backfills").glob("*.sqlite"))
    assert "Rerun the failed keys: dbxdec backfill" in out  # the one next command
    assert f"--resume {backfill_id}" not in out

    emu.set_outcome("2024-01-02", result="SUCCESS")
    code, out, _ = dbxdec("backfill", "--resume", backfill_id, *FAST)
    assert code == 0, out
    assert keys_of(emu, job_id).count("2024-01-02") == 2 and len(emu.runs(job_id)) == 5
    code, out, _ = dbxdec("backfill", "--resume", backfill_id)
    assert code == 0 and "nothing to run" in out

    code, out, _ = dbxdec("backfills", "--json")
    listed = json.loads(out)
    assert [(b["id"], b["state"], b["succeeded"]) for b in listed] == [
        (backfill_id, "succeeded", 4)
    ]
    code, _, err = dbxdec("backfill", "nightly", "--resume", backfill_id)
    assert code == 2 and "--resume ID takes no JOB" in err


def test_status_grid_from_run_history(dbxdec: Cli, emu: JobsEmulator, project: Path) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-03", result="FAILED")
    dbxdec("backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-04", *FAST)

    code, out, _ = dbxdec(
        "status", "nightly", "--start", "2024-01-01", "--end", "2024-01-06", "--json"
    )
    assert code == 0
    assert json.loads(out)["states"] == {
        "2024-01-01": "succeeded",
        "2024-01-02": "succeeded",
        "2024-01-03": "failed",
        "2024-01-04": "succeeded",
        "2024-01-05": "missing",
        "2024-01-06": "missing",
    }
    page = project / "status.html"
    code, out, _ = dbxdec(
        "status", "nightly", "--start", "2024-01-01", "--end", "2024-02-29", "--html", str(page)
    )
    assert code == 0
    assert "2024-01" in out and "2024-02" in out and "failed 1" in out
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and 'title="2024-01-03: failed, run ' in html
    assert "<script" not in html


def test_a_narrow_dry_run_keeps_every_number_and_the_first_runs_parameters(
    dbxdec: Cli, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40 item 7: piped (80 columns) the plan was 136 wide; now the parameters that
    do not fit beside the keys follow the table, wrapped between parameters."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", "2024-01-01", "--end", "2024-01-10",
        "--batch-size", "4", "--exact", "--dry-run",
    )  # fmt: skip
    assert code == 0
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80  # sentences wrap themselves
    assert "│   1 │ 2024-01-01..2024-01-04 │ 4 │" in out
    assert "│   3 │ 2024-01-09..2024-01-10 │ 2 │" in out
    assert "Parameters of run 1 (the others differ in their keys): backfill_key=2024-01-04" in out
    assert "backfill_start_key=2024-01-01" in out and "backfill_exact=true" in out
