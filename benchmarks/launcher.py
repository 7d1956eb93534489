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
import multiprocessing as mp
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from databricks_bundle_decorators.launch.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.pacing import SchedulerOptions
from databricks_bundle_decorators.launch.plan import BackfillPlan, Slice, slice_parameters
from databricks_bundle_decorators.launch.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator

TARGET_RATIO = 1.15
TARGET_UTILISATION = 0.90
TARGET_REQUESTS = 3.0


def serve(conn: Connection, duration: float) -> None:
    """The emulator process: answers commands sent over ``conn`` until ``stop``."""
    with JobsEmulator() as emu:
        emu.default_duration = duration
        conn.send(emu.url)
        while True:
            command, *args = conn.recv()
            if command == "create_job":
                conn.send(emu.create_job(*args[:1], **args[1]))
            elif command == "reset_counters":
                emu.requests.clear()
                conn.send(None)
            elif command == "figures":
                timeline = emu.timeline(args[0])
                busy = sum(end - start for start, end, _ in timeline)
                api = sum(n for path, n in emu.requests.items() if path.startswith("/api/"))
                conn.send((busy, api, len(timeline), emu.max_concurrency(args[0])))
            elif command == "stop":
                conn.send(None)
                return


def call(conn: Connection, *message: Any) -> Any:
    conn.send(message)
    return conn.recv()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--max-concurrent", type=int, default=50)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--poll-interval", type=float, default=0.01)
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    server = ctx.Process(target=serve, args=(theirs, args.duration), daemon=True)
    server.start()
    try:
        url = ours.recv()
        job_id = call(
            ours,
            "create_job",
            "bench",
            {
                "parameters": slice_parameters((), exact=False, params={}),
                "max_concurrent_runs": 1000,
            },
        )
        from databricks.sdk import WorkspaceClient
        from databricks.sdk.config import Config

        client = WorkspaceClient(config=Config(host=url, token="dapi-bench", auth_type="pat"))
        keys = [f"key-{i:05d}" for i in range(args.keys)]
        plan = BackfillPlan("bench", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
        with tempfile.TemporaryDirectory() as tmp:
            ledger = Ledger.create(
                Path(tmp), plan, backend=BackendSpec("databricks", job_id), options=LaunchOptions()
            )
            options = SchedulerOptions(
                max_concurrent=args.max_concurrent, poll_interval=args.poll_interval
            )
            scheduler = Scheduler(DatabricksBackend(client, job_id), ledger, options)
            call(ours, "reset_counters")
            started = time.monotonic()
            state = scheduler.run()
            makespan = time.monotonic() - started
        busy, requests, runs, peak = call(ours, "figures", job_id)
        call(ours, "stop")
    finally:
        server.join(timeout=5)
        if server.is_alive():
            server.terminate()

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
    met = (
        ratio <= TARGET_RATIO and utilisation >= TARGET_UTILISATION and per_slice <= TARGET_REQUESTS
    )
    print("all targets met" if met else "TARGETS MISSED")


if __name__ == "__main__":
    main()
