"""Benchmark: a 1,000-key backfill, 50 runs at once, emulator runs lasting 0.5 s.

Targets (issue 5): makespan / ideal <= 1.15, mean slot utilisation >= 90%, at most 3
HTTP requests per slice. The launcher (scheduler + Databricks backend + ledger, the
code ``dbxdec backfill`` runs) drives the real ``WorkspaceClient``; the Jobs API
emulator runs in a separate process, like a remote workspace, so the two do not share
a GIL. All figures are measured in this one run:

- makespan: wall time of the scheduler from its first submission to the last run seen
  finished;
- ideal: ``ceil(keys / max_concurrent) * duration``;
- utilisation: the emulator's RUNNING seconds / (``max_concurrent`` * makespan);
- requests per slice: every API request the emulator received / keys.

Usage: ``python benchmarks/launcher.py [--keys 1000] [--max-concurrent 50]
[--duration 0.5] [--poll-interval 0.01]``
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from emulator_process import emulated_job, key_plan
from figures import figure

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.run.scheduler import Scheduler

TARGET_RATIO = 1.15
TARGET_UTILISATION = 0.90
TARGET_REQUESTS = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--max-concurrent", type=int, default=50)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--poll-interval", type=float, default=0.01)
    args = parser.parse_args()

    with emulated_job(args.duration, max_concurrent_runs=1000) as job:
        plan = key_plan(args.keys)
        with tempfile.TemporaryDirectory() as tmp:
            ledger = Ledger.create(
                Path(tmp),
                plan,
                backend=BackendSpec("databricks", job.job_id),
                options=LaunchOptions(),
            )
            options = LaunchOptions(
                max_concurrent=args.max_concurrent, poll_interval=args.poll_interval
            )
            scheduler = Scheduler(DatabricksBackend(job.client, job.job_id), ledger, options)
            job.start()
            started = time.monotonic()
            state = scheduler.run()
            makespan = time.monotonic() - started
        seen = job.figures()
    busy, requests, runs, peak = seen.busy, seen.requests, seen.runs, seen.peak

    ideal = math.ceil(args.keys / args.max_concurrent) * args.duration
    ratio = makespan / ideal
    utilisation = busy / (args.max_concurrent * makespan)
    per_slice = requests / args.keys
    print(
        f"backfill of {args.keys} keys, --max-concurrent {args.max_concurrent}, "
        f"runs of {args.duration} s, poll interval {args.poll_interval} s: {state}, "
        f"{runs} runs, peak concurrency {peak}"
    )
    print(f"makespan            {makespan:8.2f} s")
    print(f"ideal               {ideal:8.2f} s")
    print(f"makespan / ideal    {ratio:8.3f}   (target <= {TARGET_RATIO})")
    print(f"slot utilisation    {utilisation:8.1%}   (target >= {TARGET_UTILISATION:.0%})")
    print(
        f"requests per slice  {per_slice:8.2f}   (target <= {TARGET_REQUESTS:g}; {requests} total)"
    )
    figure("launcher", "makespan / ideal", ratio, TARGET_RATIO, better="lower", unit="x")
    figure(
        "launcher",
        "slot utilisation",
        utilisation * 100,
        TARGET_UTILISATION * 100,
        better="higher",
        unit="%",
    )
    figure("launcher", "requests per slice", per_slice, TARGET_REQUESTS, better="lower")


if __name__ == "__main__":
    main()
