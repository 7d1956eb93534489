"""Benchmark: the controller of a detached backfill (issue 28) against the emulator.

One run, two launchers over the same plan of 1,000 one-key runs lasting 0.5 s, 50 at
once:

- **the controller**: the journal is created and generation 1 of the controller job is
  started (what ``--detach`` does); the emulator runs the ``dbxdec-controller`` entry
  point as a real subprocess, which launches every run. The emulator is in this process,
  the controller in its own (they share no GIL);
- **the local launcher**: the scheduler of ``dbxdec backfill`` in this process, against
  an emulator in a separate process (as ``benchmarks/launcher.py`` runs it).

Figures, all measured here: the controller's sustained launch rate (runs started per
second, from its first ``run-now`` to its last: target >= 5/s) and, for both,
makespan (first run started to last run ended) / ideal (``ceil(keys / cap) *
duration``). The controller's start-up (journal written to first run) is printed apart:
it is a process start, paid once per generation (every 3 h).

Usage: ``python benchmarks/controller_rate.py [--keys 1000] [--max-concurrent 50]
[--duration 0.5] [--poll-interval 0.01]``
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from emulator_process import emulated_job, key_plan

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.control.handover import start_controller
from databricks_bundle_decorators.launch.ledger.journal import create_journal
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.plan.pacing import SchedulerOptions
from databricks_bundle_decorators.launch.plan.plan import slice_parameters
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

TARGET_RATE = 5.0


def _controller(keys: int, cap: int, duration: float, poll: float) -> tuple[float, float, float]:
    """(launch rate, makespan, start-up) of the controller."""
    with JobsEmulator() as emu, tempfile.TemporaryDirectory() as tmp:
        emu.default_duration = duration
        params = dict(slice_parameters((), exact=False, params={}))
        job_id = emu.create_job("bench", parameters=params, max_concurrent_runs=1000)
        ctl = emu.create_job(
            "dbxdec_controller",
            parameters={
                "backfill_id": "",
                "job_id": "",
                "generation": "",
                "poll_interval": str(poll),
                "control_every": "1",
            },
            max_concurrent_runs=100,
            settings={
                "tasks": [
                    {
                        "task_key": "controller",
                        "max_retries": -1,
                        "python_wheel_task": {
                            "package_name": "dbxdec",
                            "entry_point": "dbxdec-controller",
                            "named_parameters": {
                                "run_id": "{{job.run_id}}",
                                "controller_job_id": "{{job.id}}",
                            },
                        },
                    }
                ]
            },
        )
        client = emu.workspace_client()
        ledger = Ledger.create(
            Path(tmp),
            key_plan(keys),
            backend=BackendSpec("databricks", job_id),
            options=LaunchOptions(max_concurrent=cap),
        )
        create_journal(client, ledger, job_id=job_id, writer="bench")
        handed = time.monotonic()
        start_controller(client, ctl, backfill_id=ledger.id, job_id=job_id, generation=1)
        emu.wait_for(
            lambda runs: any(r.job_id == ctl and not r.active for r in runs),
            timeout=600,
            what="the controller run ended",
        )
        runs = emu.runs(job_id)
        busiest = ", ".join(
            f"{p.rsplit('/', 2)[-2:][-1]} {n}" for p, n in emu.requests.most_common(6)
        )
        print(f"controller requests: {busiest}")
    created = sorted(r.created for r in runs)
    starts = [r.started for r in runs if r.started is not None]
    ends = [r.ended for r in runs if r.ended is not None]
    rate = (len(created) - 1) / max(created[-1] - created[0], 1e-9)
    return rate, max(ends) - min(starts), min(created) - handed


def _local(keys: int, cap: int, duration: float, poll: float) -> float:
    """Makespan of the local launcher's scheduler."""
    with (
        emulated_job(duration, max_concurrent_runs=1000) as job,
        tempfile.TemporaryDirectory() as tmp,
    ):
        ledger = Ledger.create(
            Path(tmp), key_plan(keys), backend=BackendSpec("databricks", job.job_id),
            options=LaunchOptions(),
        )  # fmt: skip
        options = SchedulerOptions(max_concurrent=cap, poll_interval=poll)
        scheduler = Scheduler(DatabricksBackend(job.client, job.job_id), ledger, options)
        job.start()
        started = time.monotonic()
        scheduler.run()
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--max-concurrent", type=int, default=50)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--poll-interval", type=float, default=0.01)
    args = parser.parse_args()
    cap, keys, duration = args.max_concurrent, args.keys, args.duration
    ideal = math.ceil(keys / cap) * duration
    rate, controller, startup = _controller(keys, cap, duration, args.poll_interval)
    local = _local(keys, cap, duration, args.poll_interval)
    print(f"{keys} keys, {cap} at once, runs of {duration} s (ideal {ideal:.2f} s)")
    print(f"controller launch rate   {rate:8.1f} runs/s   (target >= {TARGET_RATE:g})")
    print(f"controller start-up      {startup:8.2f} s   (journal written -> first run)")
    print(f"controller makespan      {controller:8.2f} s   / ideal {controller / ideal:6.3f}")
    print(f"local launcher makespan  {local:8.2f} s   / ideal {local / ideal:6.3f}")
    print("target met" if rate >= TARGET_RATE else "TARGET MISSED")


if __name__ == "__main__":
    main()
