"""Shared fixtures. ``spark``: ONE local SparkSession for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from databricks_bundle_decorators.bundle.framework_wheel import write_framework_wheel
from databricks_bundle_decorators.testing import JobsEmulator
from tests import connect_lane

# Property tests draw the same examples on every run (CI must not fail by chance) and
# have no per-example deadline (a loaded machine must not turn slowness into a failure);
# set HYPOTHESIS_PROFILE=explore to search new examples locally.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# The short-lived JVMs tests start in subprocesses take tests/spark_conf/spark-defaults.conf
# (JIT and GC flags that start them faster); set before any JVM, inherited by subprocesses.
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).resolve().parent / "spark_conf"))

SPARK_TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    # long-lived (the session of every in-process Spark test, the Connect lane's server):
    # the JVM's default JIT, not spark_conf's first tier only
    "spark.driver.defaultJavaOptions": "",
}


@pytest.fixture(scope="session")
def spark(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The test session's SparkSession: ``local[2]``, UI off, 2 shuffle partitions.

    Created on first use and stopped at the end; every runtime helper reuses it.
    """
    pytest.importorskip("pyspark")
    if connect_lane.connect_lane(request.config):  # --spark-lane=connect: tests/connect_lane.py
        yield from connect_lane.connect_session(tmp_path_factory)
        return
    from databricks_bundle_decorators.runtime.session.spark import local_spark_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = local_spark_session(
        master="local[2]",
        app_name="dbxdec-tests",
        conf={**SPARK_TEST_CONF, "spark.sql.warehouse.dir": str(warehouse)},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def framework_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The running dbxdec's real wheel, built once per test session (a few seconds)."""
    return write_framework_wheel(tmp_path_factory.mktemp("framework-wheel"))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A fresh local warehouse folder (``<tmp>/.dbxdec/warehouse``)."""
    folder = tmp_path / ".dbxdec" / "warehouse"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def emu() -> Iterator[JobsEmulator]:
    """A Jobs API emulator whose runs last 20 ms unless a test says otherwise."""
    with JobsEmulator() as emulator:
        emulator.default_duration = 0.02
        yield emulator


@pytest.fixture
def workspace_env(
    emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> JobsEmulator:
    """The emulator as the environment's workspace (its credentials, no ~/.databrickscfg)."""
    for name in list(os.environ):
        if name.startswith("DATABRICKS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABRICKS_HOST", emu.url)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-test")
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
    return emu


def pytest_addoption(parser: pytest.Parser) -> None:
    connect_lane.add_option(parser)
    parser.addoption(
        "--soak",
        action="store_true",
        help="also run the long scenarios marked soak (make soak does; make test does not)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test`` runs two pytest-xdist workers; every test that uses Spark goes to one
    of them (``--dist loadgroup``), so a run still starts ONE SparkSession, and the other
    worker runs the tests that need no Spark meanwhile. Tests marked ``soak`` are left out
    unless ``--soak`` is given. ``tryfirst``: pytest-xdist's own hook of this name turns the
    ``xdist_group`` mark into the node id's ``@spark`` suffix its scheduler groups by, and a
    worker registers that hook after this conftest, so it would run first (pluggy calls the
    last registered first) and see no mark: every worker then started a SparkSession."""
    if not config.getoption("--soak"):
        long = [item for item in items if item.get_closest_marker("soak") is not None]
        if long:
            config.hook.pytest_deselected(items=long)
            items[:] = [item for item in items if item.get_closest_marker("soak") is None]
    for item in items:
        uses_spark = "spark" in getattr(item, "fixturenames", ())
        if uses_spark or item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))
    connect_lane.select(config, items)


@pytest.fixture(autouse=True)
def _spark_in_its_group(request: pytest.FixtureRequest) -> None:
    """Under ``--dist loadgroup`` (make test) a test on the Spark session runs on the worker
    of the group ``spark`` (its node id ends ``@spark``); one that did not would make the
    other worker start a second SparkSession, two JVMs on two cores."""
    grouped = getattr(request.config.option, "loadgroup", False)
    if not grouped or "PYTEST_XDIST_WORKER" not in os.environ:
        return
    if "spark" in request.fixturenames and not request.node.nodeid.endswith("@spark"):
        pytest.fail(
            f"{request.node.nodeid} uses the Spark session outside the xdist group 'spark'; "
            "tests/conftest.py pytest_collection_modifyitems must mark it before xdist reads it"
        )


@pytest.fixture(autouse=True)
def _serverless_confs(request: pytest.FixtureRequest) -> Iterator[None]:
    """In every test on the Spark session, dbxdec's own code may set only the Spark
    properties serverless compute lets a job set (tests/serverless_guard.py)."""
    if "spark" not in request.fixturenames:
        yield
        return
    from tests.serverless_guard import guarded_conf

    with guarded_conf():
        yield
