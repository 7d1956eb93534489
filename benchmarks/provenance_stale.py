"""Benchmark: ``dbxdec stale`` over 100,000 keys per table (issue 43).

A generated project: ``bench_a`` (hourly, 100,000 keys) reads a source and writes
``main.bench.a``; ``bench_b`` (hourly, lookback 1, 100,000 keys) reads it and writes
``main.bench.b``; ``bench_c`` (daily, 4,167 keys) reads that. The tables' Delta logs are
written by this script as the Delta protocol lays them out (one commit per 1,000 keys,
one ``add`` action per key, the provenance record in ``userMetadata``), so no JVM and no
data files are needed: ``stale`` reads only the logs, as it does on real tables (the
chain test in tests/provenance/test_stale.py runs it on real Delta).

Figures, each measured here in one run, the whole command as a user runs it (a fresh
process: Python, dbxdec and the project imported):
* the code-version part, no JVM: B's code changed, so 100,000 of B's keys and every C
  key are stale and listed (``--json``), with the index warm (target 2 s) and cold (the
  index rebuilt from the 300-odd commit files);
* the change part, timed separately and stated with the history size: the source gets
  1,000 more commits after the versions A read, each touching one hour;
* the index's size per key.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import figure

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.backfill.wire.provenance import Provenance, with_provenance

TARGET_SECONDS = 2.0
KEYS = 100_000
PER_COMMIT = 1_000
SOURCE_COMMITS = 1_000
MODULE = "bench_provenance_pipelines"

PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, HourlyBackfill, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

EVENTS = source("main.raw.bench_events", event_time="hour")
A = source("main.bench.a", event_time="ts")
B = source("main.bench.b", event_time="ts")


@job(backfill=HourlyBackfill("2020-01-01T00"), sources=[EVENTS])
def bench_a():
    @task(io_manager=SparkTableIoManager("main.bench.a", partition_column="hour"))
    def write_a():
        return EVENTS.read()

    write_a()


@job(backfill=HourlyBackfill("2020-01-01T00", lookback=1), sources=[A])
def bench_b():
    @task(io_manager=SparkTableIoManager("main.bench.b", partition_column="hour"))
    def write_b():
        return A.read()  # CODE

    write_b()


@job(backfill=DailyBackfill("2020-01-01"), sources=[B])
def bench_c():
    @task(io_manager=SparkTableIoManager("main.bench.c", partition_column="day"))
    def write_c():
        return B.read()

    write_c()
"""


def write_commit(log: Path, version: int, metadata: str, column: str, keys: list[str]) -> None:
    """One commit file: ``commitInfo`` then one ``add`` action per key's file."""
    lines = [
        json.dumps(
            {
                "commitInfo": {
                    "timestamp": 1_700_000_000_000 + version,
                    "operation": "WRITE",
                    "userMetadata": metadata,
                }
            }
        )
    ]
    for key in keys:
        add = {
            "path": f"{column}={key}/part-0.parquet",
            "partitionValues": {column: key},
            "size": 1000,
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
        }
        lines.append(json.dumps({"add": add}))
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def write_table(
    warehouse: Path,
    table: str,
    job: str,
    task: str,
    code: str,
    column: str,
    keys: list[str],
    reads: dict[str, int],
) -> int:
    """A table's log with one dbxdec commit per :data:`PER_COMMIT` keys; its versions."""
    log = warehouse.joinpath(*table.split("."), "_delta_log")
    log.mkdir(parents=True)
    version = 0
    for start in range(0, len(keys), PER_COMMIT):
        batch = keys[start : start + PER_COMMIT]
        record = Provenance(
            job, task, f"run-{version}", code=code, dbxdec="0.1.0", reads=reads,
            keys=tuple(batch), column=column,
        )  # fmt: skip
        metadata = with_provenance(f"dbxdec:{job}:{task}:run-{version}", record)
        write_commit(log, version, metadata, column, batch)
        version += 1
    return version


def fingerprints(root: Path) -> dict[str, str]:
    """The tasks' current fingerprints, as ``dbxdec stale`` computes them."""
    sys.path.insert(0, str(root))
    import importlib

    from databricks_bundle_decorators.definitions.fingerprint import task_fingerprint

    module = importlib.import_module(MODULE)
    found = {}
    for job in ("bench_a", "bench_b", "bench_c"):
        definition = getattr(module, job)
        for node in definition.graph:
            found[job] = task_fingerprint(node.definition.fn)
    return found


def stale_seconds(root: Path) -> tuple[float, dict[str, object]]:
    # as a user runs it: Python may cache bytecode (the first, cold run writes it), which a
    # PYTHONDONTWRITEBYTECODE in the caller's environment would turn into ~0.4 s of
    # compiling on every run
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dbxdec")), "stale", "--json", "--project", str(root)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    return elapsed, json.loads(done.stdout)


def main() -> None:
    hours = HourlyBackfill("2020-01-01T00", "2031-05-29T15")  # 100,000 hours
    a_keys = hours.keys()
    assert len(a_keys) == KEYS
    days = DailyBackfill("2020-01-01")
    c_keys = sorted({days.key_of(hours.window(k).start) for k in a_keys})
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text(
            f'[project]\nname = "bench"\nversion = "0"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
        )
        (root / f"{MODULE}.py").write_text(PIPELINES)
        code = fingerprints(root)
        warehouse = root / ".dbxdec" / "warehouse"
        source_log = warehouse.joinpath("main", "raw", "bench_events", "_delta_log")
        source_log.mkdir(parents=True)
        write_commit(source_log, 0, "loaded", "hour", a_keys[:10])
        a_versions = write_table(
            warehouse, "main.bench.a", "bench_a", "write_a", code["bench_a"], "hour", a_keys,
            {"main.raw.bench_events": 0},
        )  # fmt: skip
        write_table(
            warehouse, "main.bench.b", "bench_b", "write_b", "0" * 16, "hour", a_keys,
            {"main.bench.a": a_versions - 1},
        )  # fmt: skip
        write_table(
            warehouse, "main.bench.c", "bench_c", "write_c", code["bench_c"], "day", c_keys,
            {"main.bench.b": 10**6},
        )  # fmt: skip
        judged = 2 * KEYS + len(c_keys)
        print(f"tables: a {KEYS:,} keys, b {KEYS:,} keys, c {len(c_keys):,} keys")

        cold, report = stale_seconds(root)
        stale = report["stale"]
        assert isinstance(stale, list)
        warm_runs = [stale_seconds(root)[0] for _ in range(5)]
        warm = sorted(warm_runs)[2]
        print(f"code part: {len(stale):,} stale keys of {judged:,} judged (B's code changed)")
        print(f"  cold (index rebuilt from {a_versions * 2 + len(c_keys) // PER_COMMIT + 2} "
              f"commit files): {cold:.3f} s; warm (median of 5): {warm:.3f} s")  # fmt: skip
        index_bytes = sum(p.stat().st_size for p in (root / ".dbxdec" / "provenance").iterdir())
        per_key = index_bytes / judged
        print(f"index: {index_bytes / 1e6:.2f} MB for {judged:,} keys = {per_key:.1f} bytes/key")
        figure(
            "provenance_stale",
            f"stale, {judged:,} keys, code part (warm)",
            warm,
            TARGET_SECONDS,
            better="lower",
            unit="s",
        )
        figure(
            "provenance_stale",
            f"stale, {judged:,} keys, cold index",
            cold,
            TARGET_SECONDS,
            better="lower",
            unit="s",
        )

        # the change part: 1,000 source commits after A's reads, one hour each
        for i in range(1, SOURCE_COMMITS + 1):
            write_commit(source_log, i, "late rows", "hour", [a_keys[i * 50]])
        changed, report = stale_seconds(root)
        stale = report["stale"]
        assert isinstance(stale, list)
        a_stale = sum(1 for item in stale if item["job"] == "bench_a")
        print(
            f"change part: source history {SOURCE_COMMITS + 1:,} commits "
            f"({SOURCE_COMMITS:,} after A's reads): {a_stale:,} of A's keys stale, "
            f"{len(stale):,} in all, {changed:.3f} s"
        )
        figure(
            "provenance_stale",
            f"stale with {SOURCE_COMMITS:,} source commits to place",
            changed,
            TARGET_SECONDS * 2,
            better="lower",
            unit="s",
        )
        shutil.rmtree(root / ".dbxdec" / "provenance")


if __name__ == "__main__":
    main()
