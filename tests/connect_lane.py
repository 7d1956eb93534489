"""The Spark Connect lane: the Databricks-path Spark tests again, on a Spark Connect session.

Serverless compute runs task code on a Spark Connect session (no ``sparkContext``, no
RDDs, no JVM handles): https://docs.databricks.com/en/compute/serverless/limitations.html.
``pytest --spark-lane=connect`` (``make test`` runs it after the main run) starts ONE local
Spark Connect server with Delta Lake (:class:`~databricks_bundle_decorators.testing.spark_connect.SparkConnectServer`),
and the ``spark`` fixture yields a remote session to it; ``$SPARK_REMOTE`` points the
code under test (and the ``dbxdec-run`` subprocesses it starts) at the same server.

Which tests run: those marked ``connect_lane`` (a module's ``pytestmark``) that use Spark.
A test of such a module that makes sense on a classic session only, or whose path another
lane test already takes (the lane has a time budget: 180 s of ``make test`` on 2 cores),
carries ``pytest.mark.not_in_connect_lane(reason)``: skipped in this lane, the reason shown.

It runs in a process of its own: creating a remote session sets
``SPARK_CONNECT_MODE_ENABLED`` for the whole process, so classic and Connect sessions
cannot share one.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OPTION = "--spark-lane"
MARKER = "connect_lane"
NOT_IN_LANE = "not_in_connect_lane"
SPARK_REMOTE_ENV = "SPARK_REMOTE"


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        choices=("classic", "connect"),
        default="classic",
        help="classic: the in-process Spark session (default); connect: only the tests "
        f"marked {MARKER}, on a local Spark Connect server",
    )


def connect_lane(config: pytest.Config) -> bool:
    return bool(config.getoption(OPTION) == "connect")


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the lane, keep the Spark tests marked for it; skip the classic-only ones."""
    if not connect_lane(config):
        return
    kept, dropped = [], []
    for item in items:
        uses_spark = "spark" in getattr(item, "fixturenames", ())
        marked = item.get_closest_marker(MARKER) is not None
        (kept if marked and uses_spark else dropped).append(item)
        left_out = item.get_closest_marker(NOT_IN_LANE)
        if left_out is not None and marked and uses_spark:
            reason = left_out.args[0] if left_out.args else left_out.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"not in the Connect lane: {reason}"))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def connect_session(factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The lane's server and a remote session to it; stopped at the end (and at exit)."""
    from pyspark.sql import SparkSession

    from databricks_bundle_decorators.testing.spark_connect import SparkConnectServer
    from tests.conftest import SPARK_TEST_CONF

    root = factory.mktemp("spark-connect")
    server = SparkConnectServer(root / "warehouse", conf=SPARK_TEST_CONF)
    atexit.register(server.stop)  # an interrupted run leaves no JVM behind
    server.start()
    before = os.environ.get(SPARK_REMOTE_ENV)
    os.environ[SPARK_REMOTE_ENV] = server.url
    try:
        session = SparkSession.builder.remote(server.url).getOrCreate()
        session.server = server  # type: ignore[attr-defined]  # the control test reads it
        yield session
        session.stop()
    finally:
        if before is None:
            os.environ.pop(SPARK_REMOTE_ENV, None)
        else:
            os.environ[SPARK_REMOTE_ENV] = before
        server.stop()


def warehouse_of(session: Any) -> Path:
    """The lane server's warehouse folder."""
    return Path(session.server.warehouse)
