"""Benchmark: the controller of a detached backfill (issue 28) against the emulator.

One run, two launchers over the same plan of 1,000 one-key runs lasting 0.5 s, 50 at
once:

- **the controller**: the journal is created and generation 1 of the controller job is
  started (what ``--detach`` does); the emulator runs the ``dbxdec-controller`` entry
  point as a real subprocess, which launches every run. The emulator is in this process,
  the controller in its own (they share no GIL);
- **the local launcher**: the scheduler of ``dbxdec backfill`` in this process, against
  an emulator in a separate process (as ``benchmarks/launcher.py`` runs it).

Both launchers are measured the same way, from the emulator's records and one clock
(``time.monotonic``, CLOCK_MONOTONIC: one clock for every process of the machine):

- **launch rate**: run-nows per second from the first to the last (target >= 5/s for the
  controller);
- **run span**: the first run's start to the last run's end, as the emulator saw them;
- **end to end**: from the command's start (the ledger about to be created) until the
  launcher is done: the local scheduler returned, or the controller run ended (it saw
  the last run end, wrote the journal and exited), which includes its process start.

Each over the ideal ``ceil(keys / cap) * duration``, and the controller's over the local
launcher's, all from this one run.

Usage: ``python benchmarks/controller_rate.py [--keys 1000] [--max-concurrent 50]
[--duration 0.5] [--poll-interval 0.01]``
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from emulator_process import emulated_job, key_plan
from figures import figure

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.control.controller import start_controller
from databricks_bundle_decorators.launch.ledger.journal import create_journal
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.plan.plan import slice_parameters
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

TARGET_RATE = 5.0


@dataclass(frozen=True)
class Measured:
    """One launcher's figures (seconds; instants are ``time.monotonic()``)."""

    rate: float  # run-nows per second, first to last
    span: float  # first run started -> last run ended
    end_to_end: float  # command start -> launcher done
    first_run: float  # command start -> first run-now


def _measured(
    began: float, done: float, created: list[float], span: tuple[float, float]
) -> Measured:
    created = sorted(created)
    rate = (len(created) - 1) / max(created[-1] - created[0], 1e-9)
    return Measured(rate, span[1] - span[0], done - began, created[0] - began)


def _controller(keys: int, cap: int, duration: float, poll: float) -> Measured:
    """The controller, started as ``--detach`` starts it."""
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
        began = time.monotonic()
        ledger = Ledger.create(
            Path(tmp),
            key_plan(keys),
            backend=BackendSpec("databricks", job_id),
            options=LaunchOptions(max_concurrent=cap),
        )
        create_journal(client, ledger, job_id=job_id, writer="bench")
        start_controller(client, ctl, backfill_id=ledger.id, job_id=job_id, generation=1)
        emu.wait_for(
            lambda runs: any(r.job_id == ctl and not r.active for r in runs),
            timeout=900,
            what="the controller run ended",
        )
        (controller,) = emu.runs(ctl)
        assert controller.ended is not None and controller.result_state == "SUCCESS"
        timeline = emu.timeline(job_id)
        span = (timeline[0][0], max(end for _, end, _ in timeline))
        created = [r.created for r in emu.runs(job_id)]
        busiest = ", ".join(
            f"{p.rsplit('/', 2)[-2:][-1]} {n}" for p, n in emu.requests.most_common(6)
        )
        print(f"controller requests: {busiest}")
    assert len(created) == keys, f"{len(created)} runs of {keys} keys"
    return _measured(began, controller.ended, created, span)


def _local(keys: int, cap: int, duration: float, poll: float) -> Measured:
    """The local launcher's scheduler (``dbxdec backfill`` without --detach)."""
    with (
        emulated_job(duration, max_concurrent_runs=1000) as job,
        tempfile.TemporaryDirectory() as tmp,
    ):
        job.start()
        began = time.monotonic()
        ledger = Ledger.create(
            Path(tmp), key_plan(keys), backend=BackendSpec("databricks", job.job_id),
            options=LaunchOptions(max_concurrent=cap),
        )  # fmt: skip
        options = LaunchOptions(max_concurrent=cap, poll_interval=poll)
        scheduler = Scheduler(DatabricksBackend(job.client, job.job_id), ledger, options)
        state = scheduler.run()
        done = time.monotonic()
        seen = job.figures()
    assert state == "succeeded" and seen.runs == keys, f"{state}, {seen.runs} runs"
    return _measured(began, done, list(seen.created), seen.span)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--max-concurrent", type=int, default=50)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--poll-interval", type=float, default=0.01)
    args = parser.parse_args()
    cap, keys, duration = args.max_concurrent, args.keys, args.duration
    ideal = math.ceil(keys / cap) * duration
    ctl = _controller(keys, cap, duration, args.poll_interval)
    local = _local(keys, cap, duration, args.poll_interval)
    print(f"{keys} keys, {cap} at once, runs of {duration} s (ideal {ideal:.2f} s)")
    print(f"{'':26}{'controller':>12}{'local':>12}{'controller/local':>18}")
    rows = [
        ("launch rate (run-now/s)", ctl.rate, local.rate),
        ("first run-now after (s)", ctl.first_run, local.first_run),
        ("run span (s)", ctl.span, local.span),
        ("run span / ideal", ctl.span / ideal, local.span / ideal),
        ("end to end (s)", ctl.end_to_end, local.end_to_end),
        ("end to end / ideal", ctl.end_to_end / ideal, local.end_to_end / ideal),
    ]
    for label, a, b in rows:
        print(f"{label:26}{a:12.3f}{b:12.3f}{a / b:18.3f}")
    figure(
        "controller_rate",
        "controller launch rate",
        ctl.rate,
        TARGET_RATE,
        better="higher",
        unit="/s",
    )


if __name__ == "__main__":
    main()
