"""``dbxdec graph``: the table graph as text and JSON, and a cycle refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bundle.projects import make_project
from tests.cli.clirun import assert_one_error_line, run

CHAIN = """\
from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

A = "main.chain.a_out"
B = "main.chain.b_out"

@job(name="JOBPREFIX_a", backfill=DailyBackfill("2024-01-01"))
def a():
    @task(io_manager=SparkTableIoManager(A, partition_column="day"))
    def produce(): ...
    produce()

@job(name="JOBPREFIX_b", backfill=DailyBackfill("2024-01-01", lookback=1),
     sources=[source(A, event_time="day")])
def b():
    @task(io_manager=SparkTableIoManager(B, partition_column="day"))
    def produce(): ...
    produce()

@job(name="JOBPREFIX_c", backfill=MonthlyBackfill("2024-01-01"),
     sources=[source(B, event_time="day")])
def c():
    @task
    def produce(): ...
    produce()
"""

CYCLE = """
@job(name="JOBPREFIX_loop", sources=[source(B)])
def loop():
    @task(io_manager=SparkTableIoManager("main.chain.loop_out"))
    def produce(): ...
    produce()

@job(name="JOBPREFIX_feeder", sources=[source("main.chain.loop_out")])
def feeder():
    @task(io_manager=SparkTableIoManager("main.chain.x"))
    def produce(): ...
    produce()
"""


def test_graph_prints_jobs_tables_and_edges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, CHAIN)
    code, out, err = run(["graph", "--project", str(tmp_path)], capsys)
    assert code == 0, err
    a, b, c = p.job("a"), p.job("b"), p.job("c")
    assert out.splitlines()[:4] == ["jobs (3):", f"  {a}", f"  {b}", f"  {c}"]
    assert f"  main.chain.a_out  written by {a}; read by {b}" in out
    assert f"  {a} -> {b}  via main.chain.a_out: daily -> daily (window overlap, lookback 1)" in out
    assert f"  {b} -> {c}  via main.chain.b_out: daily -> monthly" in out


def test_graph_json_is_the_documented_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, CHAIN)
    code, out, _ = run(["graph", "--json", "--project", str(tmp_path)], capsys)
    assert code == 0
    data = json.loads(out)
    assert sorted(data) == ["edges", "jobs", "tables", "version"]
    assert [e["downstream"] for e in data["edges"]] == [p.job("b"), p.job("c")]
    assert data["edges"][1]["downstream_kind"] == "monthly"


def test_a_cycle_between_jobs_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = CHAIN.replace(
        '@job(name="JOBPREFIX_a", backfill=DailyBackfill("2024-01-01"))',
        '@job(name="JOBPREFIX_a", backfill=DailyBackfill("2024-01-01"), '
        'sources=[source("main.chain.x")])',
    )
    p = make_project(tmp_path, source + CYCLE)
    code, _, err = run(["graph", "--project", str(tmp_path)], capsys)
    assert code == 1
    line = assert_one_error_line(err)
    a, b, loop, feeder = p.job("a"), p.job("b"), p.job("loop"), p.job("feeder")
    assert f"cycle: {a} -> {b} -> {loop} -> {feeder} -> {a}" in line
