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
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    ledger_dir,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator
from databricks_bundle_decorators.testing.emulator import RunRecord

from .conftest import BACKFILL_PARAMS, write_project

DBXDEC = str(Path(sys.executable).parent / "dbxdec")
START, END, KEYS = "2024-01-01", "2024-07-18", 200
NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}
RUN_NOW = "/api/2.2/jobs/run-now"


def launcher_env(emu: JobsEmulator, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
    env.update(
        DATABRICKS_HOST=emu.url,
        DATABRICKS_TOKEN="dapi-test",
        DATABRICKS_CONFIG_FILE=str(home / "no-databrickscfg"),
        HOME=str(home),
    )
    return env


def start_launcher(
    project: Path, env: dict[str, str], *args: str, log: Path | None = None
) -> subprocess.Popen[str]:
    """``dbxdec backfill`` as a subprocess; its output goes to ``log`` when given (a
    launcher the test holds at a gate must never block on a full pipe)."""
    command = [DBXDEC, "backfill", *args, "--project", str(project), "--json"]
    command += ["--poll-interval", "0.01"]
    if log is None:
        return subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    with log.open("w") as sink:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)


def the_ledger(project: Path) -> Path:
    (found,) = ledger_dir(project).glob("*.sqlite")
    return found


def park_next_submission(emu: JobsEmulator, proc: subprocess.Popen[str]) -> None:
    """Block until the launcher has a ``run-now`` parked at the emulator's gate."""
    try:
        emu.wait_for_blocked_submissions(1, timeout=120)
    except TimeoutError:
        proc.kill()
        raise AssertionError(f"the launcher never reached the gate (exit {proc.wait()})") from None


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
    """Three trials in make test (before any run, then two random points); the soak
    scenario below runs the ten of the crash test."""
    sigkill_trials(tmp_path, 3)


@pytest.mark.soak  # ten launchers killed and ten resumed: ~140 s of make test
def test_sigkill_at_ten_random_points_then_resume_runs_every_key_exactly_once(
    tmp_path: Path,
) -> None:
    sigkill_trials(tmp_path, 10)


def sigkill_trials(tmp_path: Path, trials: int) -> None:
    """The launcher dies at a random point, chosen by how many runs exist, not by time.

    The emulator's gate parks the next ``run-now`` (before it is applied) once the
    chosen number of runs exists and the held key's run is RUNNING; SIGKILL lands
    while that request waits. The parked request is then applied with nobody to read
    the reply, like a response lost in the network. Trial 0 dies before any run; the
    points of the others come from one seeded generator, so a trial is the same in both
    tests.
    """
    rng = random.Random(20240101)
    keys = [(date(2024, 1, 1) + timedelta(days=i)).isoformat() for i in range(KEYS)]
    for trial in range(trials):
        project = write_project(tmp_path / f"trial{trial}")
        with JobsEmulator() as emu:
            emu.default_duration = 0.05
            job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
            created = 0 if trial == 0 else rng.randrange(1, 150)  # trial 0: before any run
            held = keys[rng.randrange(max(0, created - 15), created)] if created else None
            if held is not None:
                emu.set_outcome(held, hold=True)  # in flight when the launcher dies

            def kill_point(
                runs: list[RunRecord], created: int = created, held: str | None = held
            ) -> bool:
                # The held key's own run, not any run: run-nows are sent side by side, so
                # the first `created` runs need not hold the held key, and any other run
                # may end (0.05 s) between this check and the kill.
                return len(runs) >= created and (
                    held is None or any(r.active and r.outcome_key == held for r in runs)
                )

            emu.block_submissions(kill_point)
            env = launcher_env(emu, tmp_path)
            proc = start_launcher(
                project,
                env,
                *("nightly", "--start", START, "--end", END, "--max-concurrent", "16"),
                log=tmp_path / f"trial{trial}.log",
            )
            park_next_submission(emu, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            at_kill = emu.runs(job_id)
            assert created <= len(at_kill) < KEYS
            assert any(r.active for r in at_kill) == (held is not None)
            emu.unblock_submissions()
            emu.release()

            ledger_path = the_ledger(project)
            resume = start_launcher(project, env, "--resume", ledger_path.stem)
            out, err = resume.communicate(timeout=120)
            assert resume.returncode == 0, err
            assert json.loads(out.splitlines()[-1])["counts"]["done"] == KEYS
            emu.wait_until_idle()
            assert_each_key_ran_once(emu, job_id, KEYS)
            assert read_ledger(ledger_path).state == "succeeded"


@pytest.mark.slow
def test_sigint_drains_then_prints_the_resume_command(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj")
    with JobsEmulator() as emu:
        emu.hold_runs = True  # the three first runs are in flight when Ctrl-C comes
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
        emu.wait_for_runs(3, job_id=job_id)
        proc.send_signal(signal.SIGINT)
        assert proc.stdout is not None
        events = []
        for line in proc.stdout:  # the launcher flushes one JSON event per line
            events.append(json.loads(line))
            if events[-1].get("event") == "draining":
                break
        emu.release()
        _, err = proc.communicate(timeout=60)

        assert proc.returncode == 130
        ledger_path = the_ledger(project)
        assert f"--resume {ledger_path.stem}" in err
        runs = emu.runs(job_id)
        assert len(runs) == 3 and all(r.result_state == "SUCCESS" for r in runs)  # drained
        assert read_ledger(ledger_path).state == "interrupted"


@pytest.mark.slow
def test_backfill_completes_through_throttling_and_dropped_connections(tmp_path: Path) -> None:
    with JobsEmulator() as emu:
        emu.default_duration = 0.02
        job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
        emu.set_faults(error_rate=0.2, drop_rate=0.03, retry_after=0, seed=7)
        # Scripted faults come first and are certain to fire; the random ones add noise.
        emu.inject_fault(RUN_NOW, kind="drop_after")  # a run-now applied, its reply lost
        emu.inject_fault(RUN_NOW, status=429, count=3)
        emu.inject_fault(RUN_NOW, status=503, count=3)
        keys = [f"k{i:03d}" for i in range(KEYS)]
        plan = BackfillPlan("nightly", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
        ledger = Ledger.create(
            tmp_path, plan, backend=BackendSpec("databricks", job_id), options=LaunchOptions()
        )
        client = emu.workspace_client(retry_timeout_seconds=120)
        options = LaunchOptions(max_concurrent=32, poll_interval=0.02, retry_delay=0.05)

        state = Scheduler(DatabricksBackend(client, job_id), ledger, options).run()

        assert state == "succeeded"
        assert emu.faults[f"429 {RUN_NOW}"] >= 3 and emu.faults[f"503 {RUN_NOW}"] >= 3
        assert emu.faults[f"drop_after {RUN_NOW}"] >= 1
        emu.wait_until_idle()
        assert_each_key_ran_once(emu, job_id, KEYS)
