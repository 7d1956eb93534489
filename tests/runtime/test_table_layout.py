"""``SparkTableIoManager(table_properties=..., cluster_by=...)`` on real local Delta:
applied at creation, checked (never changed) afterwards, refused where Delta cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import DailyBackfill, Registry, job, task
from databricks_bundle_decorators.runtime import run_job_locally
from databricks_bundle_decorators.runtime.core.predicates import quote_literal
from databricks_bundle_decorators.runtime.io.spark_table import SparkTableIoManager
from databricks_bundle_decorators.runtime.storage.layout import TableLayout

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

PROPERTIES = {"delta.logRetentionDuration": "interval 60 days", "team.owner": "it's data"}


def pipeline(properties: dict[str, str], cluster_by: list[str]) -> Registry:
    registry = Registry()
    io = SparkTableIoManager(
        "main.layout.orders",
        partition_column="day",
        table_properties=properties,
        cluster_by=cluster_by,
    )

    @job(backfill=DailyBackfill("2024-01-01"), registry=registry)
    def layout_orders() -> None:
        @task(io_manager=io)
        def orders() -> Any:
            from pyspark.sql import SparkSession

            from databricks_bundle_decorators.io_managers import get_written_keys

            rows = [(key, n, "eu") for key in get_written_keys() for n in range(3)]
            spark = SparkSession.builder.getOrCreate()
            return spark.createDataFrame(rows, "day string, n int, region string")

        orders()

    return registry


def run(registry: Registry, warehouse: Path, first: str, last: str) -> Any:
    params = {"backfill_start_key": first, "backfill_key": last}
    return run_job_locally(registry, "layout_orders", params=params, warehouse=warehouse)


def detail(spark: Any, warehouse: Path) -> Any:
    path = warehouse / "main" / "layout" / "orders"
    return spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()


@pytest.mark.spark
def test_properties_and_clustering_are_applied_and_writes_replace_exactly_the_keys(
    spark: Any, warehouse: Path
) -> None:
    registry = pipeline(PROPERTIES, ["region", "day"])
    assert run(registry, warehouse, "2024-01-01", "2024-01-03").succeeded

    shown = detail(spark, warehouse)
    assert list(shown.clusteringColumns) == ["region", "day"]
    assert list(shown.partitionColumns) == []  # Delta does not combine the two
    assert {k: shown.properties[k] for k in PROPERTIES} == PROPERTIES

    assert run(registry, warehouse, "2024-01-02", "2024-01-02").succeeded
    frame = spark.read.format("delta").load(str(warehouse / "main" / "layout" / "orders"))
    counts = {r.day: r["count"] for r in frame.groupBy("day").count().collect()}
    assert counts == {"2024-01-01": 3, "2024-01-02": 3, "2024-01-03": 3}


@pytest.mark.spark
def test_an_existing_table_with_other_settings_is_refused_not_changed(
    spark: Any, warehouse: Path
) -> None:
    assert run(pipeline(PROPERTIES, ["region"]), warehouse, "2024-01-01", "2024-01-01").succeeded
    version = detail(spark, warehouse)

    other = pipeline({"team.owner": "someone else"}, ["day"])
    result = run(other, warehouse, "2024-01-02", "2024-01-02")

    assert not result.succeeded
    error = result.failed[0].error
    assert "clustered by ['region'], declared ['day']" in error
    assert "property team.owner is \"it's data\", declared 'someone else'" in error
    assert "nothing was written" in error and "\n" not in error
    after = detail(spark, warehouse)
    assert (after.lastModified, after.numFiles) == (version.lastModified, version.numFiles)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cluster_by": ["day"], "format": "parquet"}, "Delta table settings"),
        ({"cluster_by": "day"}, "a list of column names"),
        ({"cluster_by": ["day; DROP"]}, "not a valid column name"),
        ({"cluster_by": ["day", "day"]}, "names a column twice"),
        ({"table_properties": {"a b": "1"}}, "not a table property name"),
        ({"table_properties": {"a": 1}}, "must be a string"),
    ],
)
def test_bad_settings_are_refused_at_definition(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparkTableIoManager("main.layout.orders", partition_column="day", **kwargs)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_.]{0,20}", fullmatch=True),
        st.text(max_size=20),
        max_size=4,
    )
)
def test_create_sql_quotes_every_property_value(properties: dict[str, str]) -> None:
    layout = TableLayout.declare(properties, ["day"])
    sql = layout.create_sql("delta.`/t`", "`day` STRING", "day")
    assert "PARTITIONED BY" not in sql and "CLUSTER BY (`day`)" in sql
    assert layout.difference({"clusteringColumns": ["day"], "properties": properties}) is None
    for name, value in properties.items():
        assert f"{quote_literal(name)} = {quote_literal(value)}" in sql
