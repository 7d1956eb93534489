"""The client floor, statically: the Databricks path uses only the PySpark API of the
oldest client dbxdec supports (serverless environment 2's Databricks Connect 15.4),
read from that client's wheel (tests/client_floor_api.py), never installed."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.bundle.client_floor import FLOOR_CONNECT_VERSION
from tests.client_floor_api import (
    SparkApi,
    clients_dir,
    floor_problems,
    floor_wheel,
    installed_sources,
    wheel_sources,
)
from tests.databricks_path import databricks_path_modules


@pytest.fixture(scope="module")
def apis() -> tuple[SparkApi, SparkApi]:
    """``(floor, reference)``: the floor client's pyspark API and the tests' pyspark API."""
    wheel = floor_wheel()
    if wheel is None:
        pytest.fail(
            f"the Databricks Connect {FLOOR_CONNECT_VERSION} wheel is not in {clients_dir()}: "
            "run make setup (or python -m tests.client_floor_api)"
        )
    return SparkApi(wheel_sources(wheel)), SparkApi(installed_sources())


def test_the_databricks_path_uses_only_the_floor_client_s_pyspark_api(
    apis: tuple[SparkApi, SparkApi],
) -> None:
    floor, reference = apis
    problems = [
        line
        for name, text in databricks_path_modules()
        for line in floor_problems(name, text, floor, reference)
    ]
    assert problems == [], "\n".join(problems)


PLANTED = """
from pyspark.sql import functions as F
from pyspark.sql.functions import randstr

try:
    from pyspark.logger import PySparkLogger  # guarded: the code copes without it
except ImportError:
    PySparkLogger = None


def create(spark, frame, table):
    ddl = frame.schema.toDDL()
    return frame.select(F.dayname("day"), F.col("x")), ddl, table.exists()
"""


def test_spark_4_api_is_found_and_guarded_imports_are_not(
    apis: tuple[SparkApi, SparkApi],
) -> None:
    floor, reference = apis
    assert "toDDL" in reference.members and "toDDL" not in floor.members
    assert floor_problems("planted", PLANTED, floor, reference) == [
        "planted:12: .toDDL: a member of a Spark class (DataFrame, Column, StructType, ...) in "
        "the tests' pyspark that no such class of the floor's pyspark has",
        "planted:13: uses pyspark.sql.functions.dayname: not in the floor's pyspark",
        "planted:3: imports randstr from pyspark.sql.functions: not in the floor's pyspark",
    ]
