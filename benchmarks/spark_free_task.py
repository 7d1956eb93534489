"""Benchmark: time from process start to the task function, ``dbxdec-run`` of a
Spark-free task (no IoManager, no source, no table read: no SparkSession, no JVM).

Each run launches ``dbxdec-run`` as Databricks does (one process per task); the task
writes ``time.time()`` to a file when it starts. The figure is that stamp minus the
time taken just before the process is launched: interpreter start, imports, module
load, tracing the one job, key resolution. For scale, the same is measured for a bare
``python -c`` that writes the time.

Usage: ``python benchmarks/spark_free_task.py [--runs 10]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DBXDEC_RUN = Path(sys.executable).with_name("dbxdec-run")
PIPELINE = """\
import os
import time

from databricks_bundle_decorators import job, task


@job
def spark_free():
    @task
    def stamp():
        with open(os.environ["STAMP_FILE"], "w") as out:
            out.write(repr(time.time()))

    stamp()
"""
BARE = "import os, time; open(os.environ['STAMP_FILE'], 'w').write(repr(time.time()))"


def measure(command: list[str], env: dict[str, str], stamp: Path) -> float:
    """Seconds from just before launching ``command`` to the time it wrote to ``stamp``."""
    stamp.unlink(missing_ok=True)
    started = time.time()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return float(stamp.read_text()) - started


def summary(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"  {label:<28} min {ms[0]:7.1f} ms   median {statistics.median(ms):7.1f} ms   "
        f"max {ms[-1]:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "spark_free_bench.py").write_text(PIPELINE, encoding="utf-8")
        stamp = root / "stamp"
        env = {k: v for k, v in os.environ.items() if k != "DBXDEC_SPARK_MASTER"}
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [folder, env.get("PYTHONPATH")])),
            STAMP_FILE=str(stamp),
            DBXDEC_WAREHOUSE=str(root / "warehouse"),
            DBXDEC_STATE_DIR=str(root / "state"),
        )
        task = [
            str(DBXDEC_RUN),
            "--dbxdec_job=spark_free",
            "--dbxdec_task=stamp",
            "--dbxdec_module=spark_free_bench",
        ]
        measure(task, env, stamp)  # warm the file system cache and .pyc files
        dbxdec = [measure(task, env, stamp) for _ in range(runs)]
        bare = [measure([sys.executable, "-c", BARE], env, stamp) for _ in range(runs)]
    print(f"process start -> task function, {runs} runs each")
    print(summary("dbxdec-run, Spark-free task", dbxdec))
    print(summary("bare python -c", bare))


if __name__ == "__main__":
    main()
