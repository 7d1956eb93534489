"""The example pipeline: its graph, deterministic data, and the demo's commands end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.examples import sales_pipeline
from databricks_bundle_decorators.examples.sales_pipeline import (
    clean_sales,
    daily_revenue_of,
    generate_sales,
)
from tests.cli.clirun import run


def test_graph_and_backfill() -> None:
    job = sales_pipeline.sales_pipeline
    graph = job.graph
    assert graph.topological_order() == [
        "generate_events",
        "clean_events",
        "daily_revenue",
        "region_totals",
    ]
    (edge,) = graph["region_totals"].inputs
    assert edge.all_partitions and edge.upstream == "daily_revenue"
    assert job.backfill is sales_pipeline.BACKFILL and sales_pipeline.BACKFILL.lookback == 2


@pytest.mark.spark
def test_events_are_deterministic_per_day_whatever_the_range(spark: Any) -> None:
    from pyspark.sql import functions as F

    alone = generate_sales(spark, ["2024-01-02"], 300, 7)
    ranged = generate_sales(spark, ["2024-01-01", "2024-01-02", "2024-01-03"], 300, 7).where(
        F.col("event_date") == "2024-01-02"
    )
    assert sorted(alone.collect()) == sorted(ranged.collect())
    assert alone.subtract(generate_sales(spark, ["2024-01-02"], 300, 8)).count() > 0
    clean = clean_sales(alone)
    assert 0 < clean.count() < alone.count()
    assert clean.where("customer_id IS NULL OR amount <= 0").count() == 0
    stamps = alone.agg(F.min("event_ts"), F.max("event_ts")).first()
    assert str(stamps[0]) >= "2024-01-02" and str(stamps[1]) < "2024-01-03"


@pytest.mark.spark
def test_rolling_revenue_uses_lookback_days_but_writes_only_the_run(spark: Any) -> None:
    clean = clean_sales(generate_sales(spark, ["2024-01-01", "2024-01-02", "2024-01-03"], 200, 7))
    daily = daily_revenue_of(clean, ["2024-01-03"]).collect()
    assert {r.event_date for r in daily} == {"2024-01-03"}
    per_day = daily_revenue_of(clean, ["2024-01-01", "2024-01-02", "2024-01-03"]).collect()
    for row in daily:
        expected = sum(r.revenue for r in per_day if r.region == row.region)
        assert row.revenue_3d == pytest.approx(expected)


@pytest.mark.spark
@pytest.mark.slow
def test_the_demo_commands_backfill_a_ranged_run_and_draw_its_health(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What ``make demo`` runs (fewer days and events): ``dbxdec backfill --local`` in
    ranged runs, then ``dbxdec status --local``."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[tool.dbxdec]\npipelines = ["{sales_pipeline.__name__}"]\n', encoding="utf-8"
    )
    where = ["--project", str(project)]
    backfill = ["backfill", "sales_pipeline", "--start", "2024-01-01", "--end", "2024-01-03"]
    code, out, err = run(
        [*backfill, "--batch-size", "3", "--local", "--param", "events_per_day=100", *where],
        capsys,
    )
    assert code == 0, out + err
    assert "1 succeeded, 0 failed" in out

    code, out, err = run(
        ["status", "sales_pipeline", "--local", "--end", "2024-01-05", *where], capsys
    )
    assert code == 0, out + err
    assert "succeeded 3" in out and "missing 2" in out
    tables = project / ".dbxdec" / "warehouse" / "main" / "dbxdec_demo"
    totals = spark.read.format("delta").load(str(tables / "sales_region_totals"))
    assert {r.days for r in totals.collect()} == {3}
