"""Benchmark: how much of a local backfill is idle time between runs (issue 25, item 3).

The project ``dbxdec init`` makes (its ``daily_orders`` job), in a fresh temporary folder,
backfilled locally for 3 and for 27 daily keys by the ``dbxdec backfill --local`` command
in a process of its own (one run at a time, the local default). Figures per case:

- total: from the command's start until its summary line (the loop's end);
- runs: the sum of the runs' own durations (each run's start and end in the ledger, as
  the local backend recorded them in the run's thread);
- idle: total - runs, and its share of the total;
- after the first run (the first includes Spark's start-up): from the first run's end to
  the summary line, against the later runs' summed durations -- the gaps in which the
  launcher had not yet noticed an end. Target: under 10%;
- exit: from the summary line until the process has exited (the JVM stopping).

``--before SRC`` also measures the command with an older version's sources first on the
path (``SRC``: a checkout's ``src``) and prints its rows above this tree's::

    mkdir /tmp/before && git archive main src | tar -x -C /tmp/before
    .venv/bin/python benchmarks/local_loop.py --before /tmp/before/src

Usage: ``python benchmarks/local_loop.py [--days 3 27] [--before SRC]``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from figures import figure

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers

TARGET_IDLE_AFTER_FIRST = 0.10
JOB = "daily_orders"
FIRST_DAY = date(2024, 1, 1)
SUMMARY = re.compile(r"^Backfill \S+ of ")  # "Backfill <id> of <job>: <state> - ..."


@dataclass(frozen=True, slots=True)
class Figures:
    days: int
    state: str
    total: float
    runs: tuple[tuple[float, float], ...]  # each run's own (start, end), epoch seconds
    started: float  # the command's start, epoch seconds
    loop_end: float  # its summary line, epoch seconds
    exited: float

    @property
    def run_seconds(self) -> float:
        return sum(end - start for start, end in self.runs)

    @property
    def idle_share(self) -> float:
        return 1 - self.run_seconds / self.total

    @property
    def after_first(self) -> tuple[float, float]:
        """Seconds from the first run's end to the loop's end, and the later runs' sum."""
        window = self.loop_end - self.runs[0][1]
        later = sum(end - start for start, end in self.runs[1:])
        return window, later

    @property
    def idle_after_first(self) -> float:
        window, later = self.after_first
        return 1 - later / window if window > 0 else 0.0


def make_project(folder: Path, command: list[str]) -> Path:
    """``dbxdec init``'s project, made by this tree's dbxdec (what is measured is the
    backfill command, which runs with the sources under test)."""
    subprocess.run(
        [*command, "init", "loop"], cwd=folder, check=True, text=True, capture_output=True
    )
    return folder / "loop"


def measure(days: int, src: str | None) -> Figures:
    """One local backfill of ``days`` keys in a fresh project, with ``src`` first on the
    path (``None``: this interpreter's dbxdec, this tree's in its venv)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # lines timed as they are printed
    if src:
        env["PYTHONPATH"] = src
    command = [
        sys.executable,
        "-c",
        "from databricks_bundle_decorators.cli.main import main; main()",
    ]
    with tempfile.TemporaryDirectory(prefix="dbxdec-loop-") as tmp:
        project = make_project(Path(tmp), command)
        last = FIRST_DAY + timedelta(days=days - 1)
        args = [
            "backfill",
            JOB,
            "--local",
            "--start",
            FIRST_DAY.isoformat(),
            "--end",
            last.isoformat(),
            "--project",
            str(project),
        ]
        started = time.time()
        process = subprocess.Popen(
            [*command, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        loop_end = 0.0
        assert process.stdout is not None
        for line in process.stdout:
            if SUMMARY.match(line):
                loop_end = loop_end or time.time()  # the summary line: the loop has ended
        process.wait()
        exited = time.time()
        (ledger,) = list_ledgers(project, JOB)
        runs = tuple(
            (a.started_at, a.ended_at)
            for record in ledger.slices
            for a in record.attempts
            if a.started_at is not None and a.ended_at is not None
        )
        return Figures(
            days,
            ledger.state,
            (loop_end or exited) - started,
            tuple(sorted(runs)),
            started,
            loop_end or exited,
            exited,
        )


def row(label: str, f: Figures) -> str:
    window, later = f.after_first
    return (
        f"{f.days:4d} {label:7} {f.state:>9} {f.total:8.1f}s {f.run_seconds:7.1f}s "
        f"{f.total - f.run_seconds:7.1f}s {f.idle_share:6.1%}  {window:7.1f}s {later:7.1f}s "
        f"{f.idle_after_first:6.1%}  {f.exited - f.loop_end:5.1f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--days", type=int, nargs="+", default=[3, 27])
    parser.add_argument("--before", metavar="SRC", help="also measure the sources in SRC")
    args = parser.parse_args()
    print(
        f"local loop of `dbxdec init`'s {JOB}, one run at a time "
        f"(target: idle after the first run < {TARGET_IDLE_AFTER_FIRST:.0%})"
    )
    print(
        f"{'keys':>4} {'code':7} {'state':>9} {'total':>9} {'runs':>8} {'idle':>8} "
        f"{'share':>6}  {'after 1st':>8} {'runs':>8} {'idle':>6}  {'exit':>6}"
    )
    for days in args.days:
        if args.before:
            print(row("before", measure(days, args.before)), flush=True)
        figures = measure(days, None)
        print(row("after" if args.before else "", figures), flush=True)
        figure(
            "local_loop",
            f"{days} keys: idle after the first run",
            figures.idle_after_first * 100,
            TARGET_IDLE_AFTER_FIRST * 100,
            better="lower",
            unit="%",
        )


if __name__ == "__main__":
    main()
