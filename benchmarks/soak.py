"""Soak: run the timing-sensitive tests again and again with every core busy; report flakes.

A test that passes on an idle laptop and fails on a loaded CI machine throws a day's
work away. This script loads every core with a busy loop (one process per core, at
``--nice`` priority: 19, the lowest, leaves the tests most of the CPU; 0 competes with
them as equals), runs the long scenarios make test leaves out (tests marked ``soak``) once,
the launcher, CLI, emulator and durability tests ``--runs`` times
and the whole suite ``--full-runs`` times exactly as ``make test`` runs it (two
pytest-xdist workers, the Spark tests grouped on one), and prints each run's outcome, the
tests that failed and how often, the load average seen, and the ten slowest tests of the
suite rounds.

Usage: python benchmarks/soak.py [--runs 10] [--full-runs 3] [--no-load] [--nice 19]
           [--workers 2] [--subset tests/launch tests/cli tests/testing]
           [-- extra pytest args]

Exit status: 0 when no run failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUBSET = ("tests/launch", "tests/cli", "tests/testing")
# Packaging, not timing: a fresh venv, pip and the project's own tests (minutes per run);
# the whole-suite runs still include it.
SUBSET_SKIPS = (
    "tests/cli/test_init_command.py::test_an_initialised_project_installs_and_passes_its_own_tests",
)
# pytest's "FAILED tests/x.py::test_y - ..." / "ERROR tests/x.py::test_y" summary lines.
FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)
TOTALS_LINE = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed|errors?)\b.*?) in [\d.]+s", re.MULTILINE)
# pytest --durations: "12.34s call     tests/x.py::test_y"
DURATION_LINE = re.compile(r"^([\d.]+)s (call|setup|teardown) +(\S+)$", re.MULTILINE)
LOGS = Path(tempfile.gettempdir()) / "dbxdec-soak"


def _burn(niceness: int) -> None:  # pragma: no cover - runs in the load processes
    os.nice(niceness)
    while True:
        pass


@contextmanager
def cpu_load(enabled: bool, niceness: int = 19) -> Iterator[int]:
    """One busy process per core while inside the block; yields how many."""
    if not enabled:
        yield 0
        return
    workers = [
        multiprocessing.Process(target=_burn, args=(niceness,), daemon=True)
        for _ in range(os.cpu_count() or 1)
    ]
    for worker in workers:
        worker.start()
    try:
        yield len(workers)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()


@dataclass
class RunResult:
    label: str
    returncode: int
    seconds: float
    totals: str
    failures: list[str]
    load: float
    log: Path | None
    durations: list[tuple[float, str, str]]  # (seconds, phase, test): the slowest ten


def run_pytest(label: str, paths: list[str], extra: list[str]) -> RunResult:
    """One pytest run without coverage (timing, not coverage, is what is soaked)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:cov", *paths, *extra]
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        done = subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=False)
        log.seek(0)
        output = log.read()
    seconds = time.monotonic() - started
    durations = [(float(s), phase, test) for s, phase, test in DURATION_LINE.findall(output)]
    totals = TOTALS_LINE.findall(output)
    failures = [name for _, name in FAILED_LINE.findall(output)]
    if done.returncode != 0 and not failures:  # collection error, crash, interrupted
        failures = [f"<pytest exit {done.returncode}: {output.strip().splitlines()[-1:]}>"]
    kept = None
    if done.returncode != 0:  # keep the whole output of a failed run for the post-mortem
        LOGS.mkdir(exist_ok=True)
        kept = LOGS / f"{label.replace(' ', '-').replace('/', 'of')}-{os.getpid()}.log"
        kept.write_text(output)
    return RunResult(
        label,
        done.returncode,
        seconds,
        totals[-1] if totals else "no summary",
        failures,
        os.getloadavg()[0],
        kept,
        durations,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of the subset (default 10)")
    parser.add_argument("--full-runs", type=int, default=3, help="runs of the whole suite")
    parser.add_argument(
        "--workers", type=int, default=2, help="pytest-xdist workers of a suite run (0: none)"
    )
    parser.add_argument(
        "--nice", type=int, default=19, help="niceness of the busy processes (0-19; default 19)"
    )
    parser.add_argument("--subset", nargs="+", default=list(SUBSET), help="the soaked tests")
    parser.add_argument("--no-load", action="store_true", help="do not load the cores")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    if args.runs < 0 or args.full_runs < 0:
        parser.error("--runs and --full-runs must not be negative")

    results: list[RunResult] = []
    with cpu_load(not args.no_load, args.nice) as burners:
        print(
            f"soak: {burners} busy processes at nice {args.nice} on {os.cpu_count()} cores",
            flush=True,
        )
        subset = [*args.subset, *(f"--deselect={test}" for test in SUBSET_SKIPS)]
        suite = ["--durations=10"]  # as make test runs it: xdist workers, Spark on one
        if args.workers:
            suite += ["-n", str(args.workers), "--dist", "loadgroup"]
        # the long scenarios (marked soak: make test leaves them out), once
        plan = [("scenarios", ["--soak", "-m", "soak", "tests"])]
        plan += [(f"subset {i + 1}/{args.runs}", subset) for i in range(args.runs)]
        plan += [(f"suite {i + 1}/{args.full_runs}", suite) for i in range(args.full_runs)]
        for label, paths in plan:
            result = run_pytest(label, paths, args.pytest_args)
            results.append(result)
            verdict = "ok" if result.returncode == 0 else "FAILED"
            print(
                f"{label:12} {verdict:6} {result.seconds:7.1f} s  load {result.load:4.1f}  "
                f"{result.totals}",
                flush=True,
            )
            for name in result.failures:
                print(f"    {name}", flush=True)
            if result.log is not None:
                print(f"    output: {result.log}", flush=True)

    flaky = Counter(name for result in results for name in result.failures)
    failed_runs = sum(result.returncode != 0 for result in results)
    print(f"\nsoak: {len(results)} runs, {failed_runs} failed; {len(flaky)} distinct failures")
    for name, count in flaky.most_common():
        print(f"  {count} x {name}")
    for kind in ("subset", "suite"):
        times = [r.seconds for r in results if r.label.startswith(kind)]
        if times:
            print(f"  {kind}: {len(times)} runs, {min(times):.0f}-{max(times):.0f} s each")
    slowest = sorted((d for r in results for d in r.durations), reverse=True)[:10]
    if slowest:
        print("  slowest tests of the suite rounds:")
        for seconds, phase, test in slowest:
            print(f"    {seconds:6.1f} s  {phase:8} {test}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
