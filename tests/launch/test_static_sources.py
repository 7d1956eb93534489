"""Issue 40 items 3 and 4 on real local Delta: a region x day job reads a multi-region
source with ``source(..., static_column="region")``, which keeps only the run's regions
(``get_static_keys()``) as ``event_time`` keeps only its days; and a region x day output
without its static column is refused at definition time (``validate``, no Spark), naming
the job, the table and the user's line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.clirun import FAST, Cli, own_registry

from .undo_project import table_rows

MODULE = "static_source_pipelines"
PIPELINES = """
from databricks_bundle_decorators import (
    DailyBackfill, MultiBackfill, StaticBackfill, get_static_keys, job, source, task)
from databricks_bundle_decorators.io_managers import SparkTableIoManager

ORDERS = source("raw.shop.orders", event_time="day", static_column="region",
                local="seeds/orders.csv")
KEYS = MultiBackfill(StaticBackfill(["eu", "us", "jp"]), DailyBackfill("2024-01-01", "2024-01-31"))


@job(backfill=KEYS, sources=[ORDERS])
def regional_totals():
    @task(io_manager=SparkTableIoManager(
        "main.shop.regional_totals", partition_column="day", static_column="region"))
    def totals():
        from pyspark.sql import functions as F

        assert get_static_keys() == ["us"], get_static_keys()
        return ORDERS.read().groupBy("region", "day").agg(F.sum("amount").alias("total"))

    totals()
"""
SEED = "region,day,amount\n" + "".join(
    f"{region},2024-01-0{d},{d}\n" for region in ("eu", "us", "jp") for d in (1, 2, 3)
)
UNSPLIT = """
from databricks_bundle_decorators import DailyBackfill, MultiBackfill, StaticBackfill, job, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

KEYS = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01", "2024-01-31"))


@job(backfill=KEYS)
def unsplit_totals():
    @task(io_manager=SparkTableIoManager("main.shop.unsplit", partition_column="day"))
    def totals():
        return None

    totals()
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "proj"
    (root / "seeds").mkdir(parents=True)
    (root / "seeds" / "orders.csv").write_text(SEED)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "static_src"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    with own_registry(MODULE):
        yield root


@pytest.mark.spark
def test_a_static_column_keeps_the_runs_regions(
    spark: Any, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    keys = "us:2024-01-01,us:2024-01-02"
    code, out, err = dbxdec("backfill", "regional_totals", "--keys", keys, "--batch-size", "2",
                            "--local", *FAST)  # fmt: skip
    assert code == 0, out + err  # without the filter: rows outside the run's keys
    rows = table_rows(spark, project, "main.shop.regional_totals")
    got = sorted((str(r[0]), str(r[1]), int(r[2])) for r in rows)
    assert got == [("us", "2024-01-01", 1), ("us", "2024-01-02", 2)], rows


def test_a_static_x_time_output_without_its_static_column_is_refused_at_definition(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / f"{MODULE}.py").write_text(UNSPLIT)
    code, out, err = Cli(project, capsys)("validate")
    assert code == 1, out + err
    text = out + err
    assert "unsplit_totals" in text and "main.shop.unsplit" in text
    assert "add static_column='<the column holding it>'" in text
    assert f"{MODULE}.py:" in text  # the user's line, not dbxdec's
    assert "Traceback" not in text


def test_a_static_column_on_a_job_without_a_static_dimension_is_refused() -> None:
    from databricks_bundle_decorators import DailyBackfill, source
    from databricks_bundle_decorators.definitions import Registry
    from databricks_bundle_decorators.errors import DefinitionError

    orders = source("raw.shop.orders", event_time="day", static_column="region")

    def daily_totals() -> None: ...

    with pytest.raises(DefinitionError, match="has no static dimension"):
        Registry().job(daily_totals, backfill=DailyBackfill("2024-01-01"), sources=[orders])


@pytest.mark.parametrize(
    "command",
    [
        ("backfill", "unsplit_totals", "--start", "2024-01-01", "--end", "2024-01-02", "--local"),
        ("catchup", "unsplit_totals", "--local"),
    ],
    ids=["backfill", "catchup"],
)
def test_a_dry_run_refuses_a_static_x_time_output_without_its_static_column(
    project: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    # the job's body is traced when the command loads it, before any plan or Spark
    (project / f"{MODULE}.py").write_text(UNSPLIT)
    code, out, err = Cli(project, capsys)(*command, "--dry-run")
    assert code == 1, out + err
    assert "Dry run" not in out + err
    (line,) = err.strip().splitlines()
    assert "job 'unsplit_totals'" in line and "main.shop.unsplit" in line
    assert "add static_column='<the column holding it>'" in line
    assert f"{MODULE}.py:" in line
