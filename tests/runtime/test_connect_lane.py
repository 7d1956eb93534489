"""The Spark Connect lane runs through Connect (tests/connect_lane.py), and a planted
``sparkContext`` on the Databricks path fails there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.definitions.contracts import RunEnvironment
from databricks_bundle_decorators.runtime.io.spark_table import SparkTableIoManager
from databricks_bundle_decorators.runtime.storage import delta as delta_module
from tests import connect_lane
from tests.runtime.test_delta import _write

pytestmark = [pytest.mark.spark, pytest.mark.connect_lane]


def test_the_session_is_the_lane_s_kind(spark: Any, request: pytest.FixtureRequest) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if not connect_lane.connect_lane(request.config):
        assert not isinstance(spark, ConnectSession)  # the main run stays classic
        return
    assert isinstance(spark, ConnectSession)
    spark.range(3).write.format("delta").saveAsTable("lane_control")
    table = connect_lane.warehouse_of(spark) / "lane_control"
    assert (table / "_delta_log").is_dir()  # written by the server, in its warehouse
    assert spark.read.table("lane_control").count() == 3


def test_a_planted_spark_context_on_the_databricks_path_fails_in_the_lane(
    spark: Any, warehouse: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    exists = delta_module.delta_table_exists

    def planted(session: Any, table: Any) -> bool:
        session.sparkContext.setLocalProperty("planted", "1")  # a JVM handle
        return exists(session, table)

    monkeypatch.setattr(delta_module, "delta_table_exists", planted)
    io = SparkTableIoManager("main.test.planted", partition_column="day", time_column="ts")
    environment = RunEnvironment(spark, warehouse, run_id="r1")
    if not connect_lane.connect_lane(request.config):
        _write(io, environment, ["2024-10-01"])  # a classic session accepts it
        return
    from pyspark.errors import PySparkAttributeError

    with pytest.raises(PySparkAttributeError, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        _write(io, environment, ["2024-10-01"])
