"""What ``dbxdec backfill / catchup / backfills`` print when they refuse or give up,
end to end in-process against the Jobs API emulator: the exit code, one line on stderr,
and on disk no new ledger and in the workspace no new run where nothing was to run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir, read_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, NIGHTLY_PARAMS, Cli
from tests.launch.conftest import keys_of

RUN_NOW = "/api/2.2/jobs/run-now"
DAYS = [f"2024-01-0{d}" for d in range(1, 7)]


def ledger_files(project: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in ledger_dir(project).glob("*.sqlite")}


def backfill_id(out: str) -> str:
    """The id from the ``Backfill <id>: <job>, ...`` header a backfill prints first."""
    found = re.search(r"^Backfill (\S+): ", out, re.MULTILINE)
    assert found, out
    return found.group(1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["backfill", "nightly", "--start", DAYS[0], "--end", DAYS[3], "--rerun", "missing"],
            "nothing to run: every selected key has run before",
            id="rerun-missing",
        ),
        pytest.param(
            ["backfill", "nightly", "--start", DAYS[0], "--end", DAYS[5], "--rerun", "failed"],
            "nothing to run: no selected key's latest run failed",
            id="rerun-failed-with-keys-never-run",
        ),
        pytest.param(
            ["catchup", "nightly", "--start", DAYS[0], "--end", DAYS[3]],
            "nothing to run: every selected key has succeeded or is running",
            id="catchup",
        ),
        pytest.param(
            ["backfill", "--resume", "{id}"],
            "nothing to run: every selected key is already done",
            id="resume",
        ),
    ],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["plain", "json"])
def test_nothing_to_run_launches_nothing_and_writes_no_ledger(
    dbxdec: Cli, emu: JobsEmulator, project: Path, args: list[str], message: str, as_json: bool
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, out, _ = dbxdec("backfill", "nightly", "--start", DAYS[0], "--end", DAYS[2], *FAST)
    assert code == 0, out
    done = backfill_id(out)
    emu.set_outcome(DAYS[3], hold=True)  # a run still in progress, started elsewhere
    emu.workspace_client().jobs.run_now(job_id, job_parameters={"backfill_key": DAYS[3]})
    before = ledger_files(project)
    sent = emu.requests[RUN_NOW]  # copies of a slow run-now included

    argv = [a.format(id=done) for a in args] + (["--json"] if as_json else [])
    code, out, err = dbxdec(*argv, *FAST)

    assert code == 0 and err == ""
    if as_json:
        assert json.loads(out) == {"event": "summary", "state": "succeeded", "message": message}
    else:
        assert out == f"{message}\n"
    assert emu.requests[RUN_NOW] == sent and len(emu.runs(job_id)) == 4  # no new run
    assert ledger_files(project) == before  # no new ledger, the old one untouched


def test_backfills_table_lists_a_succeeded_and_a_failed_backfill(
    dbxdec: Cli, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # wide enough for every column (80: id, state, outcome)
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[4], result="FAILED", message="table locked")
    code, out, _ = dbxdec("backfill", "nightly", "--start", DAYS[0], "--end", DAYS[2], *FAST)
    assert code == 0
    succeeded = backfill_id(out)
    code, out, _ = dbxdec("backfill", "nightly", "--start", DAYS[3], "--end", DAYS[5], *FAST)
    assert code == 1
    failed = backfill_id(out)

    code, out, err = dbxdec("backfills")

    assert code == 0 and err == ""
    cells = [
        [cell.strip() for cell in line.strip("┃│").split(line[0])]
        for line in out.splitlines()
        if line[:1] in ("┃", "│")
    ]
    started = [row.pop(1) for row in cells]
    assert started[0] == "started"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", when) for when in started[1:])
    assert cells == [
        ["id", "job", "backend", "state", "succeeded", "failed", "runs"],
        [failed, "nightly", "databricks", "failed", "2", "1", "3"],  # newest first
        [succeeded, "nightly", "databricks", "succeeded", "3", "0", "3"],
    ]
    code, out, _ = dbxdec("backfills", "--job", "regions")
    assert code == 0 and out == "No backfills yet.\n"


def test_a_submission_given_up_exits_1_and_resume_runs_every_key_once(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.inject_fault(RUN_NOW, status=500, count=4)  # every try the launcher makes
    keys = ",".join(DAYS[:3])

    # Faults are scripted request by request: a slow run-now is never sent again here.
    never_resend = ("--resend-after", "0")
    code, out, err = dbxdec(
        "backfill", "nightly", "--keys", keys, "--max-concurrent", "1", *FAST, *never_resend
    )

    assert code == 1
    done = backfill_id(out)
    resume = f"dbxdec backfill --project {project} --resume {done}"
    assert err == "Error: 1 of 3 runs failed; run the command above to finish\n"
    assert (
        f"could not submit {DAYS[0]}: Internal error (emulated fault). (gave up after 4 tries); "
        "no new runs will be launched"
    ) in out
    assert f"Resume this backfill:  {resume}" in out
    assert emu.runs(job_id) == [] and emu.requests[RUN_NOW] == 4
    saved = read_ledger(ledger_dir(project) / f"{done}.sqlite")
    assert [r.state for r in saved.slices] == ["submitting", "pending", "pending"]

    code, out, err = dbxdec("backfill", "--resume", done, *FAST)

    assert code == 0 and err == "", out
    assert sorted(keys_of(emu, job_id)) == DAYS[:3]
    token = saved.slices[0].attempts[0].token  # the open attempt found its run by its token
    assert emu.runs(job_id)[0].idempotency_token == token


def test_a_fatal_rejection_exits_1_and_points_at_resume(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.inject_fault(RUN_NOW, status=403)
    keys = ",".join(DAYS[:4])

    code, out, err = dbxdec(
        "backfill",
        "nightly",
        "--keys",
        keys,
        "--max-concurrent",
        "1",
        "--retries",
        "2",
        *FAST,
        "--resend-after",
        "0",  # one request counted: a slow run-now is never sent again here
    )

    assert code == 1
    done = backfill_id(out)
    # Three keys never ran: rerunning the refused one alone would forget them.
    resume = f"dbxdec backfill --project {project} --resume {done}"
    assert err == "Error: 1 of 4 runs failed; run the command above to finish\n"
    assert f"Resume this backfill:  {resume}" in out and "Rerun the failed keys" not in out
    assert "the backend refused a submission: Permission denied (emulated fault). " in out
    # the error once, in its progress line; the summary points at it (issue 25)
    assert f"  FAILED {DAYS[0]}: the error above" in out and "(run None)" not in out
    failed = next(line for line in out.splitlines() if f"failed     {DAYS[0]}" in line)
    assert "- Permission denied (emulated fault). " in failed
    assert "1 failed, 3 not run, of 4 runs" in out
    assert emu.runs(job_id) == [] and emu.requests[RUN_NOW] == 1
    saved = read_ledger(ledger_dir(project) / f"{done}.sqlite")
    assert [r.state for r in saved.slices] == ["failed", "pending", "pending", "pending"]

    code, out, err = dbxdec("backfill", "--resume", done, *FAST)

    assert code == 0 and err == "", out
    assert sorted(keys_of(emu, job_id)) == DAYS[:4]
