"""A results table written before the ``severity`` column existed gains it on the next
write (Delta ``mergeSchema``); its older rows keep a null severity."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.runtime.checks.check_results import (
    results_ref,
    write_check_results,
)

pytestmark = [pytest.mark.spark]

OLD_SCHEMA = (
    "job STRING, task STRING, key STRING, check_name STRING, measured DOUBLE, "
    "check_limit STRING, passed BOOLEAN, detail STRING, run_id STRING, checked_at TIMESTAMP"
)


def test_an_older_results_table_gains_the_severity_column(spark: Any, tmp_path: Path) -> None:
    environment = RunEnvironment(spark, tmp_path / "wh", False)
    ref = results_ref("main.ops.results", environment)
    at = datetime(2024, 1, 2)
    old = [("j", "other", "2024-01-01", "min_row_count(1)", 3.0, ">= 1", True, "", "r0", at)]
    spark.createDataFrame(old, OLD_SCHEMA).write.format("delta").partitionBy("job").save(
        str(ref.path)
    )
    warned = CheckResult("min_row_count(5)", "2024-01-01", 3.0, ">= 5", False, severity="warn")
    now = datetime(2024, 1, 3, tzinfo=timezone.utc)
    assert write_check_results("j", "t", [warned], "main.ops.results", environment, now=now) == 1
    rows = spark.read.format("delta").load(str(ref.path)).collect()
    assert sorted((r["task"], r["passed"], r["severity"]) for r in rows) == [
        ("other", True, None),
        ("t", False, "warn"),
    ]
