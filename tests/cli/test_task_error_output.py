"""A plain error in task code, through the CLI on the real local Spark (issue 25 item
4): Spark's message once (with its "Did you mean" suggestion), no line over 500
characters, the user's frames and none of PySpark's or py4j's, and no JSON line from
PySpark's query-context logger."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.launch.conftest import write_project

from .clirun import Cli

PIPELINE = """
from databricks_bundle_decorators import DailyBackfill, job, task


def totals(orders):
    from pyspark.sql import functions as F

    return orders.groupBy("o_orderdate").agg(F.sum("o_totalprise"))  # a typo


@task
def summarise() -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    orders = spark.createDataFrame([("2024-01-02", 1.5)], ["o_orderdate", "o_totalprice"])
    totals(orders).collect()


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-01-31"))
def typo_orders() -> None:
    summarise()
"""

SUGGESTION = "Did you mean one of the following?"


@pytest.mark.spark
def test_a_wrong_column_prints_sparks_message_once_in_short_lines(
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pyspark.logger import PySparkLogger

    project = write_project(tmp_path / "proj", module="typo_pipelines")
    (project / "typo_pipelines.py").write_text(PIPELINE, encoding="utf-8")
    dbxdec = Cli(project, capsys)

    code, out, err = dbxdec("backfill", "typo_orders", "--keys", "2024-01-02", "--local")

    # what the terminal shows: stdout, stderr and dbxdec's log records (pytest takes
    # those from logging's last-resort handler, which writes them to stderr otherwise)
    fmt = logging.Formatter()
    logged = "\n".join(fmt.format(r) for r in caplog.records if r.name.startswith("databricks"))
    terminal = "\n".join((out, err, logged))
    assert code == 1, terminal
    assert terminal.count(SUGGESTION) == 1, terminal
    assert "`o_totalprice`" in terminal and "UNRESOLVED_COLUMN" in terminal
    assert max(len(line) for line in terminal.splitlines()) <= 500
    assert "'Aggregate" not in terminal  # Spark's logical plan is not the user's concern
    assert "FAILED 2024-01-02: the error above" in out
    # the user's frames, outermost first, and no library frames
    assert 'typo_pipelines.py", line' in logged and "in totals" in logged
    assert "py4j" not in terminal and "site-packages" not in terminal
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        assert not PySparkLogger.getLogger(name).isEnabledFor(logging.ERROR)
