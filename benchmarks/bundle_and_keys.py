"""Bundle generation and hourly keys at scale, dbxdec beside the earlier release.

The earlier release is PyPI's ``databricks-bundle-decorators==0.12.15``, an unrelated
project that dbxdec never depends on; it needs Python 3.12 and imports under the same
name, ``databricks_bundle_decorators``. Install both into one throw-away 3.12 venv,
dbxdec as an editable install, so that the two can be told apart by ``sys.path``::

    ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/bench312
    /tmp/bench312/bin/pip install databricks-bundle-decorators==0.12.15
    /tmp/bench312/bin/pip install -e .
    /tmp/bench312/bin/python benchmarks/bundle_and_keys.py

Each side runs in a child process of the same interpreter: the dbxdec child puts this
repo's ``src`` first on ``sys.path``, the earlier-release child takes it away. Without the
earlier release (e.g. in the project's own venv) its columns are skipped.

Printed, in one run:

* load N jobs x 10 chained tasks into ``databricks.bundles.core.Resources`` (N = 1,000 and
  2,000): from declaring the jobs to the ``Resources`` object, tracing and code
  generation included, for both; the ratio dbxdec / earlier and time(2N) / time(N);
* enumerate the 87,672 (UTC) and 87,662 (Europe/Berlin) hourly keys from 2016-01-01T00 to
  2025-12-31T23 with ``HourlyBackfill(...).keys()``, the earlier release's key listing
  for its backfill definitions, for both, and the ratio;
* the ``tracemalloc`` peak of enumerating 1,000, 10,000 and 87,672 hourly keys.

Times are process CPU seconds (``time.process_time``; the machines are shared, and CPU
time does not count waiting for a core), the best of all repeats: each side runs in
``--rounds`` child processes, taking turns with the other side (A B A B ...), each child
repeating each load ``--repeats`` times. Wall seconds of the same best repeat are printed
beside them, and the 1,000-job ratio of every round. Nothing is asserted.

Usage: python benchmarks/bundle_and_keys.py [--rounds 3] [--repeats 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
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
EARLIER = "databricks-bundle-decorators==0.12.15"
JOB_COUNTS = (1_000, 2_000)
TASKS_PER_JOB = 10
HOURLY = ("2016-01-01T00", "2025-12-31T23")
ZONES = ("UTC", "Europe/Berlin")
MEMORY_SIZES = (1_000, 10_000, 87_672)


def _utc_end(size: int) -> str:
    """The last of ``size`` UTC hourly keys from ``HOURLY[0]``."""
    first = datetime.strptime(HOURLY[0], "%Y-%m-%dT%H")
    return (first + timedelta(hours=size - 1)).strftime("%Y-%m-%dT%H")


# -- the same pipeline, written for each side -----------------------------------------------


def _dbxdec_load(jobs: int) -> int:
    from databricks_bundle_decorators import DailyBackfill, Registry, RetryPolicy, task
    from databricks_bundle_decorators.bundle import CodegenOptions, resources_for

    backfill = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)
    registry = Registry()
    for index in range(jobs):

        def body() -> None:
            previous = None
            for position in range(TASKS_PER_JOB):

                def step() -> None: ...

                definition = task(
                    name=f"step_{position}",
                    depends_on=[previous] if previous is not None else None,
                    retries=RetryPolicy(2, 1000),
                    timeout_seconds=600,
                )(step)
                previous = definition()

        body.__name__ = f"job_{index:05d}"
        registry.job(
            params={"source": f"raw.table_{index}", "limit": "1000"},
            backfill=backfill,
            schedule="0 0 6 * * ?",
            tags={"team": "benchmark"},
        )(body)
    resources = resources_for(registry, CodegenOptions(package_name="benchmark-pipelines"))
    assert not resources.diagnostics.has_error()
    return len(resources.jobs)


def _earlier_load(jobs: int) -> int:
    from databricks.bundles.core import Resources
    from databricks.bundles.jobs import CronSchedule
    from databricks_bundle_decorators.codegen import generate_resources
    from databricks_bundle_decorators.registry import reset_registries

    from databricks_bundle_decorators import DailyBackfill, job, task  # the earlier release

    reset_registries()  # its registries are module globals
    backfill = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)
    for index in range(jobs):

        def body() -> None:
            previous = None
            for position in range(TASKS_PER_JOB):

                def step() -> None: ...

                step.__name__ = f"step_{position}"  # its task keys are function names
                definition = task(
                    depends_on=[previous] if previous is not None else None,
                    max_retries=2,
                    min_retry_interval_millis=1000,
                    retry_on_timeout=False,
                    timeout_seconds=600,
                )(step)
                previous = definition()

        body.__name__ = f"job_{index:05d}"
        job(
            params={"source": f"raw.table_{index}", "limit": "1000"},
            backfill=backfill,
            schedule=CronSchedule(quartz_cron_expression="0 0 6 * * ?", timezone_id="UTC"),
            tags={"team": "benchmark"},
        )(body)
    # What its load_resources does (cli.py): every generated Job into Resources.
    resources = Resources()  # type: ignore[no-untyped-call]
    for name, resource in generate_resources(package_name="benchmark-pipelines").items():
        resources.add_job(name, resource)
    return len(resources.jobs)


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


def _worker(side: str, repeats: int) -> dict[str, Any]:
    if side == "dbxdec":
        sys.path.insert(0, SRC)
    else:
        sys.path[:] = [p for p in sys.path if Path(p).resolve() != Path(SRC)]
    warnings.simplefilter("ignore")  # the earlier release warns on its key format
    try:
        import databricks_bundle_decorators as package
    except ImportError as exc:
        return {"skipped": f"not importable: {exc}"}
    is_dbxdec = str(Path(package.__file__ or "").resolve()).startswith(SRC)
    if is_dbxdec != (side == "dbxdec"):
        return {"skipped": f"databricks_bundle_decorators is {package.__file__}"}
    load = _dbxdec_load if is_dbxdec else _earlier_load
    load(10)  # imports and first-use caches out of the figures
    result: dict[str, Any] = {"load": {}, "keys": {}, "memory": {}}
    for jobs in JOB_COUNTS:
        result["load"][jobs] = _best(lambda jobs=jobs: load(jobs), repeats)
    for tz in ZONES:
        backfill = _hourly(tz)
        result["keys"][tz] = {"count": len(backfill.keys()), **_best(backfill.keys, 5)}
    for size in MEMORY_SIZES:
        result["memory"][size] = _keys_peak(_hourly("UTC", _utc_end(size)))
    return result


# -- the report (parent process) ------------------------------------------------------------


def _run_side(side: str, repeats: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", side, "--repeats", str(repeats)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"skipped": f"failed: {last}"}
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _rounds(rounds: int, repeats: int) -> tuple[dict[str, Any], dict[str, Any], list[float]]:
    """Both sides in turn, ``rounds`` times (A B A B ...), so that a drift of the machine's
    speed reaches both; the best figure of each side, and each round's 1,000-job ratio."""
    dbxdec: dict[str, Any] = {}
    earlier: dict[str, Any] = {}
    ratios: list[float] = []
    for _ in range(rounds):
        mine = _run_side("dbxdec", repeats)
        theirs = earlier if "skipped" in earlier else _run_side("earlier", repeats)
        if "skipped" in mine:
            return mine, theirs, ratios
        dbxdec, earlier = _better(dbxdec, mine), _better(earlier, theirs)
        if "skipped" not in theirs:
            small = str(JOB_COUNTS[0])
            ratios.append(mine["load"][small]["cpu"] / theirs["load"][small]["cpu"])
    return dbxdec, earlier, ratios


def _better(best: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``best`` with each timed figure replaced by ``new``'s where that took less CPU."""
    if not best or "skipped" in new:
        return new
    for group in ("load", "keys"):
        for name, figure in new[group].items():
            if figure["cpu"] < best[group][name]["cpu"]:
                best[group][name] = figure
    return best


def _seconds(figure: dict[str, float]) -> str:
    return f"{figure['cpu']:7.3f} s cpu ({figure['wall']:.3f} s wall)"


def _report(dbxdec: dict[str, Any], earlier: dict[str, Any], ratios: list[float]) -> None:
    print(f"Python {sys.version.split()[0]} ({sys.executable})")
    if "skipped" in dbxdec:
        print(f"dbxdec: skipped, {dbxdec['skipped']}")
        return
    has_earlier = "skipped" not in earlier
    if not has_earlier:
        print(f"earlier release ({EARLIER}): skipped, {earlier['skipped']}; only dbxdec below")
    print(f"\nload_resources: N jobs x {TASKS_PER_JOB} tasks into Resources (best CPU seconds)")
    for jobs in JOB_COUNTS:
        mine = dbxdec["load"][str(jobs)]
        line = f"  {jobs:>5,} jobs  dbxdec {_seconds(mine)}"
        if has_earlier:
            theirs = earlier["load"][str(jobs)]
            ratio = mine["cpu"] / theirs["cpu"]
            line += f"  earlier {_seconds(theirs)}  dbxdec/earlier {ratio:.2f}"
        print(line)
    if ratios:
        shown = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(
            f"  dbxdec/earlier at {JOB_COUNTS[0]:,} jobs, round by round: {shown} "
            f"(median {statistics.median(ratios):.2f})"
        )
    small, large = (str(jobs) for jobs in JOB_COUNTS)
    scaling = f"  time({large}) / time({small}): dbxdec {_scale(dbxdec, small, large):.2f}"
    if has_earlier:
        scaling += f"  earlier {_scale(earlier, small, large):.2f}"
    print(scaling)
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


def _scale(result: dict[str, Any], small: str, large: str) -> float:
    ratio: float = result["load"][large]["cpu"] / result["load"][small]["cpu"]
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides in turn")
    parser.add_argument("--repeats", type=int, default=2, help="repeats per load size a round")
    parser.add_argument("--worker", choices=("dbxdec", "earlier"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.repeats)))
        return
    _report(*_rounds(args.rounds, args.repeats))


if __name__ == "__main__":
    main()
