"""Check results of a local backfill on real Delta: one row per check and key in the
results table (``[tool.dbxdec] check_results``), replaced by a re-run of a key; the
ledger keeps them per slice; ``--no-checks`` lets a slice whose check fails succeed,
and the ledger, the summary and ``dbxdec status`` say checks were off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import task_order
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

from .test_multi_partitions import dbxdec

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = [pytest.mark.spark, pytest.mark.connect_lane]

MODULE = "check_results_pipelines"
RESULTS = "main.ops.check_results"
PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.checks import MaxNullFraction, MinRowCount, Unique
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

DAYS = DailyBackfill("2024-01-01", "2024-01-31")


def _rows(label, count):
    from pyspark.sql import SparkSession

    rows = [(key, f"{key}-{n}", label) for key in get_written_keys() for n in range(count)]
    return SparkSession.builder.getOrCreate().createDataFrame(
        rows, "day string, id string, label string"
    )


@job(params={"label": "first"}, backfill=DAYS)
def checked_orders():
    @task(
        io_manager=SparkTableIoManager("main.shop.orders", partition_column="day"),
        checks=[MinRowCount(2), Unique("id"), MaxNullFraction("id", 0.0)],
    )
    def orders():
        return _rows(params["label"], 3)

    orders()


@job(backfill=DAYS)
def thin_orders():
    @task(
        io_manager=SparkTableIoManager("main.shop.thin", partition_column="day"),
        checks=[MinRowCount(5)],
    )
    def thin():
        return _rows("thin", 3)

    thin()
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "checksproj"\nversion = "0.1"\n\n'
        f'[tool.dbxdec]\npipelines = ["{MODULE}"]\ncheck_results = "{RESULTS}"\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root


def results(spark: Any, root: Path, job: str) -> list[dict[str, Any]]:
    path = local_table_path(RESULTS, root / ".dbxdec" / "warehouse")
    frame = spark.read.format("delta").load(str(path)).where(f"job = '{job}'")
    return [row.asDict() for row in frame.collect()]


def run_ids(root: Path, job: str) -> dict[str, str]:
    """The run id of the latest succeeded attempt of every key, from the ledgers."""
    found: dict[str, str] = {}
    for ledger in reversed(list_ledgers(root, job)):  # oldest first: newer runs win
        for record in ledger.slices:
            last = record.last
            if last is not None and last.state == "succeeded" and last.run_id:
                found.update(dict.fromkeys(record.keys, last.run_id))
    return found


def test_a_local_backfill_stores_one_result_per_check_and_key_and_a_rerun_replaces_them(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = dbxdec(
        capsys, root, "backfill", "checked_orders", "--start", "2024-01-01", "--end",
        "2024-01-05", "--local", "--poll-interval", "0.05",
    )  # fmt: skip
    assert code == 0, out
    assert "Checks: 15 results (15 passed, 0 failed)" in out
    first = results(spark, root, "checked_orders")
    keys = [f"2024-01-0{n}" for n in range(1, 6)]
    checks = ["max_null_fraction(id, 0)", "min_row_count(2)", "unique(id)"]
    assert sorted((r["key"], r["check_name"]) for r in first) == [
        (key, check) for key in keys for check in checks
    ]
    by_check = {r["check_name"]: r for r in first if r["key"] == "2024-01-03"}
    assert by_check["min_row_count(2)"]["measured"] == 3.0
    assert by_check["min_row_count(2)"]["check_limit"] == ">= 2"
    assert by_check["unique(id)"]["measured"] == 0.0
    assert all(r["passed"] and r["task"] == "orders" and not r["detail"] for r in first)
    ran = run_ids(root, "checked_orders")
    assert {r["key"]: r["run_id"] for r in first} == ran
    # the ledger keeps the results per slice, with the run's id
    (ledger,) = list_ledgers(root, "checked_orders")
    for record in ledger.slices:
        assert record.last is not None
        assert sorted(c["check"] for c in record.last.checks) == checks
        assert {c["run_id"] for c in record.last.checks} == {record.last.run_id}

    code, out = dbxdec(
        capsys, root, "backfill", "checked_orders", "--keys", "2024-01-02,2024-01-03",
        "--batch-size", "2", "--param", "label=second", "--local", "--poll-interval", "0.05",
    )  # fmt: skip
    assert code == 0, out
    again = results(spark, root, "checked_orders")
    assert len(again) == 15  # replaced, not added to
    assert sorted((r["key"], r["check_name"]) for r in again) == [
        (key, check) for key in keys for check in checks
    ]
    rerun = run_ids(root, "checked_orders")
    assert rerun["2024-01-02"] != ran["2024-01-02"]
    assert {r["key"]: r["run_id"] for r in again} == rerun
    unchanged = {(r["key"], r["check_name"], r["run_id"]) for r in first}
    kept = {(r["key"], r["check_name"], r["run_id"]) for r in again}
    assert {k for k in unchanged if k[0] not in ("2024-01-02", "2024-01-03")} <= kept


@pytest.mark.not_in_connect_lane(
    "lane budget: check results are written by the other check-results test"
)
def test_no_checks_lets_a_failing_check_pass_and_says_so(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("backfill", "thin_orders", "--keys", "2024-01-01", "--local", "--poll-interval", "0.05")
    code, out = dbxdec(capsys, root, *base)
    assert code == 1, out
    assert "check min_row_count(5) failed for key 2024-01-01: 3 rows" in out
    (failing,) = results(spark, root, "thin_orders")  # a failing check is a result too
    assert (failing["passed"], failing["measured"], failing["check_limit"]) == (False, 3.0, ">= 5")
    assert not (root / ".dbxdec/warehouse/main/shop/thin").exists()  # nothing written

    code, out = dbxdec(capsys, root, *base, "--no-checks")
    assert code == 0, out
    assert "Checks: off (--no-checks)" in out
    path = local_table_path("main.shop.thin", root / ".dbxdec" / "warehouse")
    assert spark.read.format("delta").load(str(path)).count() == 3
    newest = list_ledgers(root, "thin_orders")[0]
    assert newest.options.checks is False
    assert task_order(newest.slices[0].parameters).checks is False
    assert newest.slices[0].last is not None and not newest.slices[0].last.checks

    code, out = dbxdec(capsys, root, "status", "thin_orders", "--local", "--end", "2024-01-02")
    assert code == 0, out
    assert "Checks were off (dbxdec backfill --no-checks) in the latest run of: 2024-01-01" in out
