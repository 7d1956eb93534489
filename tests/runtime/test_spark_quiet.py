"""The embedded Spark starts quietly: one line says it is starting, the JVM logs only errors.

A subprocess starts the local session twice (the second reuses the first) and runs a
query; its stdout and stderr hold the starting line once and none of log4j's start-up
lines (Hadoop's NativeCodeLoader WARN, the ``Setting default log level`` banner).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from databricks_bundle_decorators.runtime.session.spark import STARTING_LINE

pytest.importorskip("pyspark")

SCRIPT = """
from databricks_bundle_decorators.runtime.session.spark import local_spark_session
spark = local_spark_session()
assert local_spark_session() is not None
print("rows", spark.range(3).count())
"""
SPARK_VARIABLES = ("DBXDEC_SPARK_MASTER", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS")


def test_the_local_spark_starts_with_one_line_and_no_log4j_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in SPARK_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "rows 3" in done.stdout
    both = done.stdout + done.stderr
    assert both.count(STARTING_LINE) == 1
    for noise in (" WARN ", " INFO ", "NativeCodeLoader", "Setting default log level", "log4j"):
        assert noise not in both, both
