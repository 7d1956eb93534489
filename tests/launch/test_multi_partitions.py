"""Two-dimensional partitions (region x day) end to end on real local Delta: ``dbxdec
backfill --start/--end`` and ``--keys`` write exactly the expected (region, day)
partitions, a re-run replaces exactly its own, and status and catch-up by data see one
row per region."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main

from .undo_project import table_history, table_rows

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = [pytest.mark.spark, pytest.mark.connect_lane]

MODULE = "multi_test_pipelines"
SALES = "main.multi.sales"
PIPELINES = """
from datetime import datetime, timezone

from databricks_bundle_decorators import (
    DailyBackfill, MultiBackfill, StaticBackfill, job, params, task)
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

sales_io = SparkTableIoManager(
    "main.multi.sales", partition_column="day", static_column="region", time_column="ts"
)
KEYS = MultiBackfill(StaticBackfill(["eu", "us", "jp"]), DailyBackfill("2024-01-01", "2024-01-31"))


@job(params={"label": "first"}, backfill=KEYS)
def regional_sales():
    @task(io_manager=sales_io)
    def write_sales():
        from pyspark.sql import SparkSession

        rows = []
        for key in get_written_keys():
            region, day = key.split(":")
            noon = datetime.fromisoformat(day + "T12:00:00+00:00")
            rows += [(region, day, noon, params["label"], n) for n in range(2)]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "region string, day string, ts timestamp, label string, n int"
        )

    write_sales()
"""


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*args, "--project", str(root)])
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out + err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "multiproj"\nversion = "0.1"\n\n'
        f'[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root


def partitions(spark: Any, root: Path) -> dict[tuple[str, str], str]:
    """(region, day) -> the label of its rows (each partition holds two rows)."""
    rows = table_rows(spark, root, SALES)
    found: dict[tuple[str, str], list[str]] = {}
    for region, day, _ts, label, _n in rows:
        found.setdefault((region, day), []).append(label)
    assert all(len(labels) == 2 for labels in found.values()), found
    return {part: labels[0] for part, labels in found.items()}


def test_region_by_day_backfill_writes_and_replaces_exactly_its_partitions(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = dbxdec(
        capsys, root, "backfill", "regional_sales", "--start", "2024-01-01", "--end",
        "2024-01-02", "--batch-size", "2", "--local", "--poll-interval", "0.05",
    )  # fmt: skip
    assert code == 0, out
    first = {(r, d): "first" for r in ("eu", "us", "jp") for d in ("2024-01-01", "2024-01-02")}
    assert partitions(spark, root) == first
    versions = len(table_history(spark, root, SALES))

    code, out = dbxdec(
        capsys, root, "backfill", "regional_sales", "--keys", "us:2024-01-02,jp:2024-01-01",
        "--param", "label=second", "--local", "--poll-interval", "0.05",
    )  # fmt: skip
    assert code == 0, out
    assert partitions(spark, root) == {
        **first,
        ("us", "2024-01-02"): "second",
        ("jp", "2024-01-01"): "second",
    }
    history = table_history(spark, root, SALES)
    assert len(history) == versions + 2  # one commit per run

    # the table is partitioned by both dimensions
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{root}/.dbxdec/warehouse/main/multi/sales`")
    assert detail.first()["partitionColumns"] == ["region", "day"]

    # status: one row per region
    code, out = dbxdec(capsys, root, "status", "regional_sales", "--local", "--end", "2024-01-02")
    assert code == 0, out
    rows = [line.split()[0] for line in out.splitlines() if line.strip()[:2] in ("eu", "us", "jp")]
    assert rows == ["eu", "us", "jp"], out

    # catch-up by data: a deleted partition is the only key planned
    spark.sql(
        f"DELETE FROM delta.`{root}/.dbxdec/warehouse/main/multi/sales` "
        "WHERE region = 'eu' AND day = '2024-01-02'"
    )
    code, out = dbxdec(
        capsys, root, "catchup", "regional_sales", "--by", "data", "--start", "2024-01-01",
        "--end", "2024-01-02", "--local", "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, out
    assert planned(out) == [["eu:2024-01-02"]]


def planned(out: str) -> list[list[str]]:
    """The keys of each run of a ``--dry-run --json`` plan."""
    for line in out.splitlines():
        if line.startswith("{") and '"runs"' in line:
            return [run["keys"] for run in json.loads(line)["runs"]]
    raise AssertionError(out)


def test_ranged_runs_stay_inside_a_region_and_plans_show_key_text(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = dbxdec(
        capsys, root, "backfill", "regional_sales", "--start", "2024-01-01", "--end",
        "2024-01-03", "--batch-size", "2", "--local", "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, out
    assert planned(out) == [
        [f"{region}:2024-01-01", f"{region}:2024-01-02"] if ranged else [f"{region}:2024-01-03"]
        for region in ("eu", "us", "jp")
        for ranged in (True, False)
    ]
    code, out = dbxdec(capsys, root, "backfill", "regional_sales", "--keys", "eu", "--dry-run")
    assert code == 2
    assert "is not a two-part key: expected STATIC:TIME" in out
