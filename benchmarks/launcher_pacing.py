"""Benchmark: how well the launcher keeps its slots busy at DEFAULT settings (issues 17, 41).

Backfills, each against a fresh Jobs API emulator in its own process (like a remote
workspace, so the two do not share a GIL), driven by the code ``dbxdec backfill`` runs
(scheduler + Databricks backend + ledger + the real ``WorkspaceClient``) with the options
a command line without ``--poll-interval`` gives, each with the emulator listing
``runs/list`` by end time and by start time (both documented):

- (a) 1,000 keys x 0.5 s runs, ``--max-concurrent 50``: makespan <= 1.10 x ideal, slot use
  >= 90%, <= 3 API requests per slice;
- (b) 300 keys x 3 s runs, ``--max-concurrent 50``: <= 1.03 x ideal;
- (c) both again with 20% of API requests answered 429/503 (``set_faults``): <= 1.25 x;
- (d) 10,000 keys x 0.5 s, ``--max-concurrent 200`` (end time): requests per slice within
  10% of (a)'s (a poll's cost does not grow with the backfill).

Figures, all measured in this one run:

- makespan: wall time of the scheduler from its start to the last run seen finished;
- ideal: keys x run length / max_concurrent;
- slot use: the emulator's RUNNING seconds / (max_concurrent x makespan);
- requests per slice: every API request the emulator received / keys.

``--before SRC`` also measures each case with an older version's sources (a process of
its own with ``SRC`` first on the path) and prints its row above this tree's::

    git worktree add /tmp/old <commit>
    .venv/bin/python benchmarks/launcher_pacing.py --before /tmp/old/src

Usage: ``python benchmarks/launcher_pacing.py [--only a|b|c|d] [--order end_time|start_time]
[--before SRC]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from emulator_process import emulated_job, key_plan
from figures import figure

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.run.scheduler import Scheduler


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    keys: int
    duration: float
    max_concurrent: int
    error_rate: float
    goal: float
    order: str = "end_time"

    @property
    def ideal(self) -> float:
        return self.keys * self.duration / self.max_concurrent

    @property
    def label(self) -> str:
        return f"{self.name} {self.order.split('_')[0]}"


ORDERS = ("end_time", "start_time")
CASES = (
    *(
        case
        for order in ORDERS
        for case in (
            Case("a", 1000, 0.5, 50, 0.0, 1.10, order),
            Case("b", 300, 3.0, 50, 0.0, 1.03, order),
            Case("c/a", 1000, 0.5, 50, 0.2, 1.25, order),
            Case("c/b", 300, 3.0, 50, 0.2, 1.25, order),
        )
    ),
    Case("d", 10_000, 0.5, 200, 0.0, 1.10, "end_time"),
)
SLOT_USE_GOAL = 0.90
PER_SLICE_GOAL = 3.0
GROWTH_GOAL = 1.10  # (d)'s requests per slice / (a)'s


@dataclass(frozen=True, slots=True)
class Figures:
    case: Case
    state: str
    makespan: float
    busy: float
    requests: int

    @property
    def ratio(self) -> float:
        return self.makespan / self.case.ideal

    @property
    def slot_use(self) -> float:
        return self.busy / (self.case.max_concurrent * self.makespan)

    @property
    def per_slice(self) -> float:
        return self.requests / self.case.keys


def run_case(case: Case) -> Figures:
    emulated = emulated_job(
        case.duration, max_concurrent_runs=1000, error_rate=case.error_rate, order=case.order
    )
    with emulated as job:
        launch = LaunchOptions(max_concurrent=case.max_concurrent)
        with tempfile.TemporaryDirectory() as tmp:
            ledger = Ledger.create(
                Path(tmp),
                key_plan(case.keys),
                backend=BackendSpec("databricks", job.job_id),
                options=launch,
            )
            scheduler = Scheduler(DatabricksBackend(job.client, job.job_id), ledger, launch)
            job.start()
            started = time.monotonic()
            state = scheduler.run()
            makespan = time.monotonic() - started
        seen = job.figures()
    return Figures(case, state, makespan, seen.busy, seen.requests)


def measure_elsewhere(case: Case, src: str) -> Figures:
    """``case`` measured in a new process with the sources in ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, __file__, "--case", case.name, "--order", case.order, "--json"]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    found = json.loads(out.strip().splitlines()[-1])
    return Figures(case, found["state"], found["makespan"], found["busy"], found["requests"])


def row(label: str, f: Figures) -> str:
    case = f.case
    goal = "-" if case.name == "d" else f"{case.goal:4.2f}x"  # (d): requests per slice
    return (
        f"{case.label:11} {label:7} {case.keys:6d} {case.duration:4.1f}s {case.max_concurrent:4d} "
        f"{case.error_rate:6.0%} {f.state:>9} {f.makespan:8.2f}s {case.ideal:6.1f}s "
        f"{f.ratio:5.2f}x {goal:>5} {f.slot_use:8.1%} {f.per_slice:9.2f}"
    )


def report(f: Figures, measured: dict[str, Figures]) -> None:
    """Print ``f``'s figures with a target for ``make bench`` (``measured``: by label)."""
    case = f.case
    name = f"({case.label}) {case.keys:,} x {case.duration} s"
    faults = f", {case.error_rate:.0%} 429/503" if case.error_rate else ""
    if case.name != "d":  # (d)'s target is its requests per slice; its makespan is shown
        figure(
            "launcher_pacing",
            f"{name}{faults}: makespan / ideal",
            f.ratio,
            case.goal,
            better="lower",
            unit="x",
        )
    if case.name == "a":
        figure("launcher_pacing", f"{name}: slot use", f.slot_use, SLOT_USE_GOAL, better="higher")
        figure(
            "launcher_pacing",
            f"{name}: requests / slice",
            f.per_slice,
            PER_SLICE_GOAL,
            better="lower",
        )
    base = measured.get(f"a {case.order.split('_')[0]}")
    if case.name == "d" and base is not None:
        figure(
            "launcher_pacing",
            f"({case.label}) requests / slice vs (a)",
            f.per_slice / base.per_slice,
            GROWTH_GOAL,
            better="lower",
            unit="x",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["a", "b", "c", "d"], help="run only these cases")
    parser.add_argument("--order", choices=ORDERS, help="only this runs/list order")
    parser.add_argument(
        "--before", metavar="SRC", help="also measure the sources in SRC (an older checkout's src)"
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, for --before
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        order = args.order or "end_time"
        f = run_case(next(c for c in CASES if c.name == args.case and c.order == order))
        figures = {"state": f.state, "makespan": f.makespan, "busy": f.busy}
        print(json.dumps({**figures, "requests": f.requests}))
        return
    only = args.only
    cases = [
        c
        for c in CASES
        if (only is None or c.name == only or c.name.startswith(f"{only}/"))
        and (args.order is None or c.order == args.order)
    ]
    print("launcher pacing at default settings (no --poll-interval)")
    print(
        f"{'case':11} {'code':7} {'keys':>6} {'run':>5} {'cap':>4} {'faults':>6} {'state':>9} "
        f"{'makespan':>9} {'ideal':>7} {'ratio':>6} {'goal':>5} {'slot use':>8} {'req/slice':>9}"
    )
    measured: dict[str, Figures] = {}
    for case in cases:
        if args.before:
            print(row("before", measure_elsewhere(case, args.before)), flush=True)
        figures = run_case(case)
        measured[case.label] = figures
        print(row("after" if args.before else "", figures), flush=True)
        report(figures, measured)


if __name__ == "__main__":
    main()
