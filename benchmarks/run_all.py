"""``make bench``: every benchmark script, then one table of their figures.

Runs each script under ``benchmarks/`` that has a target (it prints its figures through
:mod:`figures`) in its own process, one after the other, collects those figures and
prints one table: script, figure, value, target, ratio (value / target), pass or short, with the
machine's load average before and after. Timings are not tests: a figure short of its
target is reported, not failed. The exit code is non-zero only when a script errors
(a non-zero exit or a crash), so every script runs even when one fails.

Run: ``python benchmarks/run_all.py [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from figures import MARK

HERE = Path(__file__).resolve().parent
SKIPPED = {"run_all.py", "figures.py", "soak.py"}  # the runner, its helper, the soak loop


def scripts(only: list[str]) -> list[Path]:
    """The scripts with a target (they print figures through :mod:`figures`)."""
    found = sorted(
        p
        for p in HERE.glob("*.py")
        if p.name not in SKIPPED and "from figures import figure" in p.read_text()
    )
    return [p for p in found if not only or any(name in p.stem for name in only)]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def run(script: Path) -> tuple[list[dict[str, object]], int, float]:
    """The script's figures, its exit code and its wall time; its output is passed on."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    rows: list[dict[str, object]] = []
    for line in process.stdout:
        if line.startswith(MARK):
            rows.append(json.loads(line[len(MARK) :]))
        else:
            print(f"    {line}", end="", flush=True)
    code = process.wait()
    return rows, code, time.monotonic() - started


def table(rows: list[dict[str, object]]) -> list[str]:
    head = f"{'script':<22} {'figure':<46} {'value':>10} {'target':<10} {'unit':<3}"
    lines = [f"{head} {'ratio':>6}  verdict"]
    for row in rows:
        value, target = float(row["value"]), float(row["target"])  # type: ignore[arg-type]
        sign = "<=" if row["better"] == "lower" else ">="
        unit = str(row["unit"])
        ratio = value / target if target else float("nan")
        lines.append(
            f"{row['script']!s:<22} {row['figure']!s:<46} {value:>10.4g} {sign}{target:<8.4g} "
            f"{unit:<3} {ratio:>6.2f}  {'pass' if row['met'] else 'SHORT'}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="scripts whose name contains one")
    args = parser.parse_args()
    before = load()
    rows: list[dict[str, object]] = []
    errors: list[str] = []
    for script in scripts(args.only):
        print(f"== {script.name}", flush=True)
        found, code, seconds = run(script)
        print(f"   ({seconds:.0f} s, exit {code})", flush=True)
        rows += found
        if code != 0:
            errors.append(f"{script.name} exited {code}")
    print()
    print(f"load average (1, 5, 15 min): before {before}, after {load()}; {os.cpu_count()} cores")
    print("\n".join(table(rows)))
    short = sum(1 for row in rows if not row["met"])
    print(f"{len(rows)} figures: {len(rows) - short} pass, {short} short")
    for error in errors:
        print(f"ERROR: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
