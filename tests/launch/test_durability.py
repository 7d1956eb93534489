"""Crash safety and fault tolerance of ``dbxdec backfill`` against the Jobs API emulator.

The launcher runs as a real subprocess (the ``dbxdec`` console script) so it can be
killed with SIGKILL or interrupted with SIGINT; the emulator lives in the test process
and outlives it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_dir,
    read_ledger,
)
from databricks_bundle_decorators.launch.pacing import SchedulerOptions
from databricks_bundle_decorators.launch.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, write_project

DBXDEC = str(Path(sys.executable).parent / "dbxdec")
START, END, KEYS = "2024-01-01", "2024-07-18", 200
NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}


def launcher_env(emu: JobsEmulator, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
    env.update(
        DATABRICKS_HOST=emu.url,
        DATABRICKS_TOKEN="dapi-test",
        DATABRICKS_CONFIG_FILE=str(home / "no-databrickscfg"),
        HOME=str(home),
    )
    return env


def start_launcher(project: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DBXDEC, "backfill", *args, "--project", str(project), "--json", "--poll-interval", "0.01"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_ledger(project: Path, proc: subprocess.Popen[str], timeout: float = 30) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(ledger_dir(project).glob("*.json"))
        if found:
            return found[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError("the launcher wrote no ledger")


def assert_each_key_ran_once(emu: JobsEmulator, job_id: int, expected: int) -> None:
    runs = emu.runs(job_id)
    by_key = Counter(r.job_parameters["backfill_key"] for r in runs)
    successes = Counter(
        r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"
    )
    assert len(successes) == expected and set(successes.values()) == {1}
    tokens = Counter((r.job_parameters["backfill_key"], r.idempotency_token) for r in runs)
    assert set(tokens.values()) == {1}, "a (key, attempt) got two runs"
    assert set(by_key.values()) == {1}, "a key that never failed ran twice"


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_runs_every_key_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(20240101)
    killed_mid_backfill = 0
    for trial in range(10):
        project = write_project(tmp_path / f"trial{trial}")
        with JobsEmulator() as emu:
            emu.default_duration = 0.1
            job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
            env = launcher_env(emu, tmp_path)
            proc = start_launcher(
                project, env, "nightly", "--start", START, "--end", END, "--max-concurrent", "16"
            )
            ledger_path = wait_for_ledger(project, proc)
            time.sleep(rng.uniform(0.0, 1.2))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            at_kill = emu.runs(job_id)
            assert len(at_kill) < KEYS, "killed too late to test anything"
            killed_mid_backfill += bool(at_kill) and any(r.active for r in at_kill)

            resume = start_launcher(project, env, "--resume", ledger_path.stem)
            out, err = resume.communicate(timeout=120)
            assert resume.returncode == 0, err
            assert json.loads(out.splitlines()[-1])["counts"]["done"] == KEYS
            emu.wait_until_idle()
            assert_each_key_ran_once(emu, job_id, KEYS)
            assert read_ledger(ledger_path).state == "succeeded"
    assert killed_mid_backfill >= 6  # most kills left runs in flight for --resume to find


@pytest.mark.slow
def test_sigint_drains_then_prints_the_resume_command(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj")
    with JobsEmulator() as emu:
        emu.default_duration = 0.5
        job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
        proc = start_launcher(
            project,
            launcher_env(emu, tmp_path),
            "nightly",
            "--start",
            START,
            "--end",
            "2024-01-20",
            "--max-concurrent",
            "3",
        )
        ledger_path = wait_for_ledger(project, proc)
        deadline = time.monotonic() + 20
        while len(emu.runs(job_id)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)

        assert proc.returncode == 130
        assert f"--resume {ledger_path.stem}" in err
        assert any(json.loads(line).get("event") == "draining" for line in out.splitlines())
        runs = emu.runs(job_id)
        assert len(runs) == 3 and all(r.result_state == "SUCCESS" for r in runs)  # drained
        assert read_ledger(ledger_path).state == "interrupted"


@pytest.mark.slow
def test_backfill_completes_through_throttling_and_dropped_connections(tmp_path: Path) -> None:
    with JobsEmulator() as emu:
        emu.default_duration = 0.02
        job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
        emu.set_faults(error_rate=0.2, drop_rate=0.03, retry_after=0, seed=7)
        keys = [f"k{i:03d}" for i in range(KEYS)]
        plan = BackfillPlan("nightly", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
        ledger = Ledger.create(
            tmp_path, plan, backend=BackendSpec("databricks", job_id), options=LaunchOptions()
        )
        client = emu.workspace_client(retry_timeout_seconds=120)
        options = SchedulerOptions(max_concurrent=32, poll_interval=0.02, retry_delay=0.05)

        state = Scheduler(DatabricksBackend(client, job_id), ledger, options).run()

        assert state == "succeeded"
        assert emu.faults["429"] + emu.faults["503"] >= 40
        assert emu.faults["drop_after /api/2.2/jobs/run-now"] >= 1  # a lost run-now reply
        emu.wait_until_idle()
        assert_each_key_ran_once(emu, job_id, KEYS)
