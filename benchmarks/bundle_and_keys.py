"""Hourly keys at scale, dbxdec beside the earlier release.

The earlier release is PyPI's ``databricks-bundle-decorators==0.12.15``, an unrelated
project that dbxdec never depends on; it needs Python 3.12 and imports under the same
name, ``databricks_bundle_decorators``. ``make bench-earlier`` builds its venv in the
project's cache (``benchmarks/earlier_release.py``); without it its columns are skipped.
Bundle generation against the same release is ``benchmarks/generation.py``.

Each side runs in a child process: the dbxdec child with this interpreter and this
repo's ``src`` first on ``sys.path``, the earlier-release child with that venv's Python.

Printed, in one run:

* enumerate the 87,672 (UTC) and 87,662 (Europe/Berlin) hourly keys from 2016-01-01T00 to
  2025-12-31T23 with ``HourlyBackfill(...).keys()``, the earlier release's key listing
  for its backfill definitions, for both, and the ratio;
* the ``tracemalloc`` peak of enumerating 1,000, 10,000 and 87,672 hourly keys.

Times are process CPU seconds (``time.process_time``; the machines are shared, and CPU
time does not count waiting for a core), the best of all repeats: each side runs in
``--rounds`` child processes, taking turns with the other side (A B A B ...). Wall
seconds of the same best repeat are printed beside them. Nothing is asserted.

Usage: python benchmarks/bundle_and_keys.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[1] / "src")
HOURLY = ("2016-01-01T00", "2025-12-31T23")
ZONES = ("UTC", "Europe/Berlin")
MEMORY_SIZES = (1_000, 10_000, 87_672)


def _utc_end(size: int) -> str:
    """The last of ``size`` UTC hourly keys from ``HOURLY[0]``."""
    first = datetime.strptime(HOURLY[0], "%Y-%m-%dT%H")
    return (first + timedelta(hours=size - 1)).strftime("%Y-%m-%dT%H")


def _hourly(tz: str, end: str = HOURLY[1]) -> Any:
    from databricks_bundle_decorators import HourlyBackfill

    return HourlyBackfill(start_date=HOURLY[0], end_date=end, tz=tz)


# -- measuring (in a child process) ---------------------------------------------------------


def _best(run: Callable[[], object], repeats: int) -> dict[str, float]:
    """Best repeat of ``run``: CPU seconds, and the wall seconds of that repeat."""
    best = {"cpu": float("inf"), "wall": float("inf")}
    for _ in range(repeats):
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if cpu < best["cpu"]:
            best = {"cpu": cpu, "wall": wall}
    return best


def _keys_peak(backfill: Any) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    keys = backfill.keys()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"keys": len(keys), "peak": peak}


def _worker(side: str) -> dict[str, Any]:
    warnings.simplefilter("ignore")  # the earlier release warns on its key format
    try:
        import databricks_bundle_decorators as package
    except ImportError as exc:
        return {"skipped": f"not importable: {exc}"}
    is_dbxdec = str(Path(package.__file__ or "").resolve()).startswith(SRC)
    if is_dbxdec != (side == "dbxdec"):
        return {"skipped": f"databricks_bundle_decorators is {package.__file__}"}
    result: dict[str, Any] = {"keys": {}, "memory": {}}
    for tz in ZONES:
        backfill = _hourly(tz)
        result["keys"][tz] = {"count": len(backfill.keys()), **_best(backfill.keys, 5)}
    for size in MEMORY_SIZES:
        result["memory"][size] = _keys_peak(_hourly("UTC", _utc_end(size)))
    return result


# -- the report (parent process) ------------------------------------------------------------


def _run_side(side: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if side == "dbxdec":
        python = sys.executable
        env["PYTHONPATH"] = SRC
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from earlier_release import earlier_python

        found = earlier_python()
        if found is None:
            return {"skipped": "skipped (make bench-earlier builds it)"}
        python = str(found)
    command = [python, __file__, "--worker", side]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"skipped": f"failed: {last}"}
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _rounds(rounds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides in turn, ``rounds`` times (A B A B ...), so that a drift of the machine's
    speed reaches both; the best figure of each side."""
    dbxdec: dict[str, Any] = {}
    earlier: dict[str, Any] = {}
    for _ in range(rounds):
        mine = _run_side("dbxdec")
        theirs = earlier if "skipped" in earlier else _run_side("earlier")
        if "skipped" in mine:
            return mine, theirs
        dbxdec, earlier = _better(dbxdec, mine), _better(earlier, theirs)
    return dbxdec, earlier


def _better(best: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``best`` with each timed figure replaced by ``new``'s where that took less CPU."""
    if not best or "skipped" in new:
        return new
    for name, figure in new["keys"].items():
        if figure["cpu"] < best["keys"][name]["cpu"]:
            best["keys"][name] = figure
    return best


def _seconds(figure: dict[str, float]) -> str:
    return f"{figure['cpu']:7.3f} s cpu ({figure['wall']:.3f} s wall)"


def _report(dbxdec: dict[str, Any], earlier: dict[str, Any]) -> None:
    print(f"Python {sys.version.split()[0]} ({sys.executable})")
    if "skipped" in dbxdec:
        print(f"dbxdec: skipped, {dbxdec['skipped']}")
        return
    has_earlier = "skipped" not in earlier
    if not has_earlier:
        print(f"earlier release: {earlier['skipped']}; only dbxdec below")
    print(f"\nhourly keys {HOURLY[0]} .. {HOURLY[1]} (best of 5)")
    for tz in ZONES:
        mine = dbxdec["keys"][tz]
        line = f"  {tz:<14} {mine['count']:,} keys  dbxdec {_seconds(mine)}"
        if has_earlier:
            theirs = earlier["keys"][tz]
            same = "" if theirs["count"] == mine["count"] else f" ({theirs['count']:,} keys)"
            line += f"  earlier {_seconds(theirs)}{same}  dbxdec/earlier "
            line += f"{mine['cpu'] / theirs['cpu']:.3f}"
        print(line)
    print("\nhourly keys, tracemalloc peak (UTC)")
    for size in MEMORY_SIZES:
        mine = dbxdec["memory"][str(size)]
        line = f"  {mine['keys']:>6,} keys  dbxdec {mine['peak'] / 2**20:6.2f} MiB"
        if has_earlier:
            line += f"  earlier {earlier['memory'][str(size)]['peak'] / 2**20:6.2f} MiB"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides in turn")
    parser.add_argument("--worker", choices=("dbxdec", "earlier"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker)))
        return
    _report(*_rounds(args.rounds))


if __name__ == "__main__":
    main()
