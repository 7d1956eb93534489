"""One active backfill per job and key, end to end: ``dbxdec backfill`` from two project
copies (two ledgers) against ONE Jobs API emulator, the first as a real subprocess, the
second in-process; and two local launchers in one project.

Every moment is reached by an event, never by a sleep: held runs and ``wait_for_runs``
for the emulator, a socket the gated local task reports to and waits on.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.lease import CLAIMS_DIR, WorkspaceClaims
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_dir,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import NIGHTLY_PARAMS, Cli, assert_one_error_line
from tests.launch.conftest import write_project
from tests.launch.test_durability import DBXDEC, launcher_env, start_launcher, the_ledger

KEYS = [f"2024-02-{d:02d}" for d in range(1, 11)]
SPAN = ("--start", KEYS[0], "--end", KEYS[-1])
FAST = ("--poll-interval", "0.01")
HOST = socket.gethostname()
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
RUN_NOW = "/api/2.2/jobs/run-now"


@pytest.fixture
def job_id(workspace_env: JobsEmulator) -> int:
    """The deployed job, and the emulator's credentials in this process's environment."""
    return workspace_env.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)


@pytest.fixture
def first_copy(tmp_path: Path) -> Path:
    """One checkout of the project: its launcher runs as a subprocess."""
    return write_project(tmp_path / "alice")


@pytest.fixture
def second(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Another checkout (its own ledgers), driven in-process."""
    return Cli(write_project(tmp_path / "bob"), capsys)


def hold(emu: JobsEmulator, keys: list[str]) -> None:
    for key in keys:
        emu.set_outcome(key, hold=True)


def runs_per_key(emu: JobsEmulator, job_id: int) -> Counter[str]:
    return Counter(r.job_parameters["backfill_key"] for r in emu.runs(job_id))


def launch_first(
    emu: JobsEmulator, project: Path, tmp_path: Path, *args: str
) -> subprocess.Popen[str]:
    """``dbxdec backfill nightly`` over :data:`KEYS` in ``project``, as a subprocess whose
    runs all exist (and are held) when this returns."""
    before = len(emu.runs())
    proc = start_launcher(
        project,
        launcher_env(emu, tmp_path),
        *("nightly", *SPAN, "--max-concurrent", "10", *args),
        log=tmp_path / f"{project.name}.log",
    )
    try:
        emu.wait_for_runs(before + len(KEYS))
    except TimeoutError:
        proc.kill()
        raise AssertionError((tmp_path / f"{project.name}.log").read_text()) from None
    return proc


def finish(proc: subprocess.Popen[str], log: Path) -> None:
    assert proc.wait(timeout=120) == 0, log.read_text()


def test_the_same_backfill_from_two_checkouts_runs_every_key_once(
    emu: JobsEmulator, job_id: int, first_copy: Path, second: Cli, tmp_path: Path
) -> None:
    hold(emu, KEYS)
    first = launch_first(emu, first_copy, tmp_path)
    try:
        first_id = the_ledger(first_copy).stem

        code, _, err = second("backfill", "nightly", *SPAN, *FAST)

        assert code == 2
        line = assert_one_error_line(err)
        assert re.fullmatch(
            rf"Error: backfill {first_id} \(emulator@example\.com on {re.escape(HOST)}, "
            rf"started {STAMP}\) is already running 2024-02-01\.\.2024-02-10 \(10 keys\) of "
            r"job 'nightly' \(all 10 of your keys\): wait until it ends \(dbxdec backfills on "
            rf"{re.escape(HOST)} lists it, dbxdec status nightly shows its runs\); if its "
            rf"launcher died, take over with --force once its claim expires \({STAMP} unless "
            r"renewed\)",
            line,
        ), line

        code, _, err = second("backfill", "nightly", *SPAN, "--force", *FAST)
        assert code == 2
        assert assert_one_error_line(err).startswith(f"Error: --force: backfill {first_id} (")
        assert "is alive and holds 2024-02-01..2024-02-10 (10 keys)" in err

        code, _, err = second("backfill", "nightly", "--start", KEYS[7], "--end", "2024-02-12")
        assert code == 2 and "(3 of your 5 keys)" in assert_one_error_line(err)
        assert list(ledger_dir(second.project).glob("*.sqlite")) == []  # refusals leave none

        code, out, err = second("backfill", "nightly", "--keys", "2024-02-11,2024-02-12", *FAST)
        assert code == 0, out + err  # disjoint keys of the same job run side by side
        assert first.poll() is None  # ... while the first still runs
    finally:
        emu.release()
    finish(first, tmp_path / "alice.log")
    assert runs_per_key(emu, job_id) == Counter({k: 1 for k in [*KEYS, "2024-02-11", "2024-02-12"]})
    assert emu.workspace_files(CLAIMS_DIR) == {}  # both claims released


def test_a_stale_claim_is_taken_over_with_force(
    emu: JobsEmulator, job_id: int, second: Cli, tmp_path: Path
) -> None:
    # Alice's launcher took its claim ten minutes ago and has not renewed it since.
    plan = BackfillPlan("nightly", tuple(Slice(i, (k,)) for i, k in enumerate(KEYS)))
    alices = Ledger.create(
        tmp_path / "alice", plan, backend=BackendSpec("databricks", job_id), options=LaunchOptions()
    )
    ten_minutes_ago = time.time() - 600
    WorkspaceClaims(
        emu.workspace_client(), job="nightly", job_id=job_id, clock=lambda: ten_minutes_ago
    ).acquire(alices)

    code, _, err = second("backfill", "nightly", *SPAN, *FAST)

    assert code == 2
    line = assert_one_error_line(err)
    assert f"Error: backfill {alices.id} (emulator@example.com on {HOST}, started " in line
    assert "left a stale claim on 2024-02-01..2024-02-10 (10 keys) of job 'nightly'" in line
    assert f"resume it on {HOST} with dbxdec backfill --resume {alices.id}" in line
    assert line.endswith("or take its keys over with --force")
    assert emu.runs(job_id) == []

    code, out, err = second("backfill", "nightly", *SPAN, "--force", *FAST)

    assert code == 0, out + err
    assert runs_per_key(emu, job_id) == Counter(dict.fromkeys(KEYS, 1))
    assert emu.workspace_files(CLAIMS_DIR) == {}  # the stale claim gone, ours released


def test_resume_is_refused_while_another_backfill_holds_its_keys(
    emu: JobsEmulator, job_id: int, first_copy: Path, second: Cli, tmp_path: Path
) -> None:
    emu.set_outcome(KEYS[2], result="FAILED")
    code, out, _ = second("backfill", "nightly", *SPAN, *FAST)
    assert code == 1, out
    (ledger,) = ledger_dir(second.project).glob("*.sqlite")
    hold(emu, KEYS)
    first = launch_first(emu, first_copy, tmp_path)
    try:
        code, _, err = second("backfill", "--resume", ledger.stem, *FAST)

        assert code == 2
        line = assert_one_error_line(err)
        assert line.startswith(f"Error: backfill {the_ledger(first_copy).stem} (")
        assert "(your key)" in line  # only the failed key is left to resume
    finally:
        emu.release()
    finish(first, tmp_path / "alice.log")
    code, out, err = second("backfill", "--resume", ledger.stem, *FAST)
    assert code == 0, out + err


def test_runs_someone_else_launched_refuse_the_backfill(
    emu: JobsEmulator, job_id: int, second: Cli
) -> None:
    hold(emu, [KEYS[4]])
    manual = emu.workspace_client().jobs.run_now(job_id, job_parameters={"backfill_key": KEYS[4]})
    try:
        code, _, err = second("backfill", "nightly", *SPAN, *FAST)
    finally:
        emu.release()

    assert code == 2
    line = assert_one_error_line(err)
    assert line.startswith(
        f"Error: run {manual.run_id} of job 'nightly' (job {job_id}), not launched by this "
        "backfill, is running 2024-02-05 (1 key) that this backfill would run (since "
    )
    assert line.endswith("wait until it ends, or cancel it, then launch again")
    assert emu.requests[RUN_NOW] == 1 and emu.workspace_files(CLAIMS_DIR) == {}


def test_a_killed_launcher_is_resumed_without_force(
    emu: JobsEmulator, job_id: int, first_copy: Path, second: Cli, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    hold(emu, KEYS)
    first = launch_first(emu, first_copy, tmp_path)
    first.send_signal(signal.SIGKILL)
    first.wait()
    first_id = the_ledger(first_copy).stem
    try:
        code, _, err = second("backfill", "nightly", *SPAN, *FAST)

        assert code == 2
        assert (
            f"but its launcher (pid {first.pid}) is no longer running on this machine: resume "
            f"it with dbxdec backfill --resume {first_id}, or take its keys over with --force"
        ) in assert_one_error_line(err)
    finally:
        emu.release()
    code, out, err = Cli(first_copy, capsys)("backfill", "--resume", first_id, *FAST)

    assert code == 0, out + err
    assert runs_per_key(emu, job_id) == Counter(dict.fromkeys(KEYS, 1))
    assert emu.workspace_files(CLAIMS_DIR) == {}


GATED = '''
import os
import socket

from databricks_bundle_decorators import DailyBackfill, get_backfill_key, job, task


@task
def wait_at_gate() -> None:
    """Key 2024-01-01 tells the test's gate it runs, then waits for the gate's word."""
    if get_backfill_key() != "2024-01-01":
        return
    with socket.create_connection(("127.0.0.1", int(os.environ["CLAIMS_TEST_GATE"]))) as gate:
        gate.sendall(b"ready")
        gate.recv(2)


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-01-31"))
def gated() -> None:
    wait_at_gate()
'''


def test_a_second_local_backfill_of_a_job_waits_for_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "local"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "gated"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["claims_gated_pipelines"]\n'
    )
    (project / "claims_gated_pipelines.py").write_text(GATED)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "pyspark-shell")  # no jars: no Spark needed
    gate = socket.create_server(("127.0.0.1", 0))
    gate.settimeout(120)
    env = {**os.environ, "CLAIMS_TEST_GATE": str(gate.getsockname()[1])}
    command = [DBXDEC, "backfill", "gated", "--local", "--keys", "2024-01-01", *FAST]
    with (tmp_path / "first.log").open("w") as log:
        first = subprocess.Popen(
            [*command, "--project", str(project)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    second = Cli(project, capsys)
    try:
        conn, _ = gate.accept()  # the first backfill's run is inside its task now
        assert conn.recv(5) == b"ready"
        (ledger,) = ledger_dir(project).glob("*.sqlite")

        code, _, err = second("backfill", "gated", "--local", "--keys", "2024-01-02", *FAST)

        assert code == 2
        line = assert_one_error_line(err)
        assert line.startswith(f"Error: backfill {ledger.stem} (pid {first.pid}, started ")
        assert line.endswith(
            "2024-01-01 (1 key)) is already running job 'gated' locally in this project: wait "
            "until it ends (dbxdec backfills lists it); local backfills of a job run one at a "
            "time"
        )
        code, _, err = second("backfill", "gated", "--local", "--keys", "2024-01-02", "--force")
        assert code == 2 and "nothing stale to take over" in assert_one_error_line(err)
        assert len(list(ledger_dir(project).glob("*.sqlite"))) == 1  # refusals leave none

        first.send_signal(signal.SIGKILL)  # a dead launcher's lock is released by itself
        first.wait()
        conn.close()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        gate.close()

    code, out, err = second("backfill", "gated", "--local", "--keys", "2024-01-02", *FAST)
    assert code == 0, out + err
