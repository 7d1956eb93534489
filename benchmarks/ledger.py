"""Benchmark: what recording one state change costs the ledger, and a 20,000-key launch.

Part 1 (issue 17 item 4: the cost of a change must not grow with the backfill): for
ledgers of 1,000, 10,000 and 100,000 slices, one slice gets an attempt and the ledger is
saved, as the scheduler does on each tick that changed something. Measured for

- the JSON ledger (before d503579: the whole file rewritten -- temp file, fsync, rename,
  fsync the folder -- with unchanged slices' text cached, as ``Ledger.to_text`` did), and
- the SQLite ledger (``launch/ledger/ledger.py``: the header row and the changed slice's
  row, one WAL commit, ``synchronous=FULL``).

Time is the wall time of one save (median of the changes measured); bytes are what the
process handed to ``write()`` (``wchar`` of ``/proc/self/io``, so temp files, the log and
checkpoints all count; file sizes where that counter is missing). For SQLite the mean over
many changes is printed too, so the checkpoints (every ~1,000 pages of log) are paid for.

Part 2: a launcher run -- scheduler, Databricks backend and the SQLite ledger, the code
``dbxdec backfill`` runs -- of 20,000 keys whose runs last 1 s, against the Jobs API
emulator in another process (job ``max_concurrent_runs=200``, ``--max-concurrent 200``),
polling like the CLI (``--poll-interval``, default 1 s). Prints makespan / ideal (goal
<= 1.15), the saves and the time spent in them. The ratio depends mostly on the
scheduler's polling, not on the ledger.

Usage: ``python benchmarks/ledger.py [--sizes 1000 10000 100000] [--changes 20]
[--keys 20000] [--duration 1.0] [--max-concurrent 200] [--poll-interval 1.0]
[--skip-launch] [--ledger sqlite|json]``; ``--ledger json`` runs the launch on the
JSON ledger's save path instead, for comparison
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from emulator_process import emulated_job, key_plan
from figures import figure

from databricks_bundle_decorators.atomic import write_atomically
from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.scheduler import Scheduler

TARGET_RATIO = 1.15


def written_bytes() -> int:
    """Bytes this process has passed to ``write()`` so far (``-1``: unknown)."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


class JsonLedger:
    """The save path of the JSON ledger (ledger.py before the database): the whole file
    rewritten atomically, each slice's text cached until it changes."""

    def __init__(self, ledger: Ledger, path: Path) -> None:
        self.ledger = ledger
        self.path = path
        self._fragments: dict[int, tuple[SliceRecord, str]] = {}

    def update(self, record: SliceRecord) -> None:
        self.ledger.slices[record.index] = record

    def save(self) -> None:
        for record in self.ledger.slices:  # records are immutable: a new one is a change
            cached = self._fragments.get(record.index)
            if cached is None or cached[0] is not record:
                self._fragments[record.index] = (record, json.dumps(_slice_json(record)))
        self.ledger.updated_at = time.time()
        header = json.dumps(self.ledger._header(), indent=1)[:-2]  # the old to_text's
        slices = ",\n  ".join(self._fragments[r.index][1] for r in self.ledger.slices)
        write_atomically(self.path, f'{header},\n "slices": [\n  {slices}\n ]\n}}\n')


def _slice_json(record: SliceRecord) -> dict[str, Any]:
    return {
        "index": record.index,
        "keys": list(record.keys),
        "parameters": dict(record.parameters),
        "attempts": [asdict(a) for a in record.attempts],
    }


def new_ledger(root: Path, size: int) -> Ledger:
    keys = [f"2000-01-01T{i:06d}" for i in range(size)]  # hourly-like keys, one per slice
    plan = BackfillPlan("bench", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
    return Ledger.create(root, plan, backend=BackendSpec("databricks", 1), options=LaunchOptions())


def measure(
    update: Callable[[SliceRecord], None],
    save: Callable[[], None],
    ledger: Ledger,
    folder: Path,
    changes: int,
) -> tuple[list[float], list[int]]:
    """Seconds and bytes of ``changes`` saves, each after one slice got an attempt: the
    slices from the middle on, one after another, as a launcher goes through its plan."""
    seconds: list[float] = []
    written: list[int] = []
    for n in range(changes):
        record = ledger.slices[(len(ledger.slices) // 2 + n) % len(ledger.slices)]
        number = len(record.attempts) + 1
        update(record.with_attempt(Attempt(number, f"tok-{n}", "running", str(n), None, 1.0)))
        before, size = written_bytes(), folder_bytes(folder)
        started = time.perf_counter()
        save()
        seconds.append(time.perf_counter() - started)
        after = written_bytes()
        written.append(after - before if before >= 0 else folder_bytes(folder) - size)
    return seconds, written


def ledger_figures(sizes: list[int], changes: int, base: Path) -> None:
    print("One recorded change (an attempt added to one slice, then a save):")
    print(f"{'slices':>8}  {'ledger':<7} {'time / change':>14} {'bytes / change':>15}  notes")
    for size in sizes:
        folder = base / f"json-{size}"
        folder.mkdir()
        old = JsonLedger(new_ledger(folder, size), folder / "ledger.json")
        old.save()
        seconds, written = measure(old.update, old.save, old.ledger, folder, changes)
        file_size = (folder / "ledger.json").stat().st_size
        print(
            f"{size:>8,}  {'JSON':<7} {statistics.median(seconds) * 1e3:>11.2f} ms "
            f"{statistics.median(written):>15,.0f}  file {file_size / 1e6:.1f} MB"
        )
        folder = base / f"sqlite-{size}"
        ledger = new_ledger(folder, size)
        ledger.save()
        seconds, written = measure(ledger.update, ledger.save, ledger, ledger.path.parent, changes)
        many = max(changes, 2000)
        more_seconds, more_written = measure(
            ledger.update, ledger.save, ledger, ledger.path.parent, many
        )
        ledger.close()
        print(
            f"{size:>8,}  {'SQLite':<7} {statistics.median(seconds) * 1e3:>11.2f} ms "
            f"{statistics.median(written):>15,.0f}  mean of {many:,} incl. checkpoints: "
            f"{statistics.fmean(more_seconds) * 1e3:.2f} ms, "
            f"{statistics.fmean(more_written):,.0f} B; file "
            f"{ledger.path.stat().st_size / 1e6:.1f} MB"
        )


def launch_figures(args: argparse.Namespace, base: Path) -> None:
    with emulated_job(args.duration, max_concurrent_runs=args.max_concurrent) as job:
        client, job_id = job.client, job.job_id
        plan = key_plan(args.keys)
        options = LaunchOptions(max_concurrent=args.max_concurrent)
        ledger = Ledger.create(
            base / "launch", plan, backend=BackendSpec("databricks", job_id), options=options
        )
        saves: list[float] = []
        save = ledger.save
        if args.ledger == "json":
            old = JsonLedger(ledger, base / "launch" / "ledger.json")

            def save() -> None:
                old.save()
                ledger.dirty = False

        def timed_save() -> None:
            started = time.perf_counter()
            save()
            saves.append(time.perf_counter() - started)

        ledger.save = timed_save  # type: ignore[method-assign]
        scheduler = Scheduler(
            DatabricksBackend(client, job_id),
            ledger,
            replace(options, poll_interval=args.poll_interval),
        )
        job.start()
        started = time.monotonic()
        state = scheduler.run()
        makespan = time.monotonic() - started
        ledger.close()
        seen = job.figures()
    requests, runs, peak = seen.requests, seen.runs, seen.peak
    ideal = math.ceil(args.keys / args.max_concurrent) * args.duration
    print(
        f"\nLauncher: {args.keys:,} keys, runs of {args.duration:g} s, job max_concurrent_runs="
        f"{args.max_concurrent}, --max-concurrent {args.max_concurrent}, poll interval "
        f"{args.poll_interval:g} s, {args.ledger} ledger: {state}, {runs:,} runs, "
        f"peak concurrency {peak}"
    )
    print(f"makespan            {makespan:8.1f} s")
    print(f"ideal               {ideal:8.1f} s")
    print(f"makespan / ideal    {makespan / ideal:8.3f}   (goal <= {TARGET_RATIO})")
    figure(
        "ledger",
        f"launch of {args.keys:,} keys: makespan / ideal",
        makespan / ideal,
        TARGET_RATIO,
        better="lower",
        unit="x",
    )
    print(
        f"ledger saves        {len(saves):8,}   {sum(saves):.2f} s in all, median "
        f"{statistics.median(saves) * 1e3:.2f} ms, max {max(saves) * 1e3:.1f} ms"
    )
    print(f"API requests        {requests:8,}   ({requests / args.keys:.2f} per key)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--duration", type=float, default=1.0)
    parser.add_argument("--max-concurrent", type=int, default=200)
    parser.add_argument("--poll-interval", type=float, default=1.0)
    parser.add_argument("--skip-launch", action="store_true")
    parser.add_argument(
        "--ledger", choices=("sqlite", "json"), default="sqlite", help="for the launch"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"files in {tmp} ({os.statvfs(tmp).f_bsize} B blocks)")
        ledger_figures(args.sizes, args.changes, Path(tmp))
        if not args.skip_launch:
            launch_figures(args, Path(tmp))


if __name__ == "__main__":
    main()
