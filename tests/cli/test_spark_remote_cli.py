"""``--spark-remote sc://HOST:PORT``: local runs on a Spark Connect server. Bad addresses
and silent servers are one line each; a backfill through Connect writes exactly the rows
the embedded Spark writes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.examples import sales_pipeline
from databricks_bundle_decorators.runtime.session.spark_remote import SparkRemote
from databricks_bundle_decorators.testing.spark_connect import free_port
from tests import connect_lane
from tests.cli.clirun import assert_one_error_line, run

DAYS = ("--start", "2024-01-01", "--end", "2024-01-03")
TWO_DAYS = ("--start", "2024-01-01", "--end", "2024-01-02")  # the lane's budget: 2 x 4 tasks
TABLES = ("sales_raw", "sales_clean", "sales_daily", "sales_region_totals")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    return _project(tmp_path / "project")


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[tool.dbxdec]\npipelines = ["{sales_pipeline.__name__}"]\n', encoding="utf-8"
    )
    return root


@pytest.mark.parametrize(
    "address",
    ["http://127.0.0.1:15002", "sc://", "sc://host:port", "sc://host:0", "sc://host/db"],
)
@pytest.mark.parametrize("command", ["run", "backfill"])
def test_a_bad_address_is_one_usage_line(
    project: Path, capsys: pytest.CaptureFixture[str], address: str, command: str
) -> None:
    argv = [command, "sales_pipeline", "--local", "--spark-remote", address, *DAYS]
    code, _, err = run([*argv, "--project", str(project)], capsys)
    assert code == 2
    assert "--spark-remote" in assert_one_error_line(err)
    assert "SPARK_REMOTE" not in os.environ


def test_a_token_in_a_bad_address_is_never_shown(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "sales_pipeline", "--local", "--spark-remote", "sc://h:x/;token=dapi-secret"]
    code, out, err = run([*argv, "--project", str(project)], capsys)
    assert code == 2 and "dapi-secret" not in out + err


def test_the_address_from_the_environment_is_checked_too(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "localhost:15002")
    code, _, err = run(
        ["run", "sales_pipeline", "--local", *DAYS, "--project", str(project)], capsys
    )
    assert code == 2 and "not a Spark Connect address" in assert_one_error_line(err)


def test_a_server_that_does_not_answer_exits_5_at_once(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"sc://127.0.0.1:{free_port()}"  # nothing listens there
    for command in ("run", "backfill"):
        started = time.monotonic()
        argv = [command, "sales_pipeline", "--local", "--spark-remote", address, *DAYS]
        code, out, err = run([*argv, "--project", str(project)], capsys)
        assert code == 5, out + err
        line = assert_one_error_line(err)
        assert f"no Spark Connect server answers at {address}" in line
        assert time.monotonic() - started < 30  # one refused connection, no retry loop
    assert not (project / ".dbxdec" / "warehouse").exists()


def test_spark_remote_is_for_local_runs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["backfill", "sales_pipeline", "--spark-remote", "sc://127.0.0.1:15002", *DAYS]
    code, _, err = run([*argv, "--project", str(project)], capsys)
    assert code == 2 and "add --local" in assert_one_error_line(err)


@pytest.mark.parametrize(
    ("address", "host", "port"),
    [
        ("sc://127.0.0.1:15002", "127.0.0.1", 15002),
        ("sc://spark-host", "spark-host", 15002),
        ("sc://[::1]:443/;use_ssl=true", "::1", 443),
    ],
)
def test_addresses_follow_the_connection_string_format(address: str, host: str, port: int) -> None:
    remote = SparkRemote.parse(address)
    assert (remote.host, remote.port, remote.url) == (host, port, address)


@pytest.mark.spark
@pytest.mark.connect_lane
@pytest.mark.slow
def test_a_backfill_through_spark_connect_writes_what_the_embedded_spark_writes(
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if not connect_lane.connect_lane(request.config):
        pytest.skip("runs in the Spark Connect lane, which has a server (tests/connect_lane.py)")
    url = spark.server.url
    monkeypatch.delenv("SPARK_REMOTE")  # the option alone sends the runs to the server
    # the same backfill on the embedded Spark, in a process of its own (a classic session
    # cannot live beside a Connect one, and PySpark marks this process's environment as
    # Connect mode, which a child would inherit); started first, it runs beside the
    # Connect one (each waits on its own JVM)
    classic = _project(tmp_path / "classic")
    connect = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS")
    env = {k: v for k, v in os.environ.items() if k not in connect}
    dbxdec = Path(sys.executable).parent / "dbxdec"
    argv = ["backfill", "sales_pipeline", "--local", *TWO_DAYS, "--param", "events_per_day=50"]
    embedded = subprocess.Popen(
        [str(dbxdec), *argv, "--project", str(classic)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    remote = _project(tmp_path / "remote")
    argv = ["backfill", "sales_pipeline", "--local", "--spark-remote", url, *TWO_DAYS]
    try:
        code, out, err = run(
            [*argv, "--param", "events_per_day=50", "--project", str(remote)], capsys
        )
    finally:
        classic_out, classic_err = embedded.communicate(timeout=600)
    assert code == 0, out + err
    assert os.environ["SPARK_REMOTE"] == url
    assert embedded.returncode == 0, classic_out + classic_err
    for table in TABLES:
        rows = [_rows(spark, root, table) for root in (remote, classic)]
        assert rows[0] == rows[1] and rows[0], table


def _rows(spark: Any, root: Path, table: str) -> list[tuple[Any, ...]]:
    path = root / ".dbxdec" / "warehouse" / "main" / "dbxdec_demo" / table
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect())
