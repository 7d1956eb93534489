"""The client floor in ``dbxdec generate``: a serverless environment or a job cluster's
runtime older than the oldest compute dbxdec supports is refused in one line, and
nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.client_floor import (
    FLOOR_ENVIRONMENT_VERSION,
    FLOOR_RUNTIME,
    environment_below_floor,
    runtime_below_floor,
)
from tests.bundle.projects import make_project
from tests.cli.clirun import assert_one_error_line, run

SERVERLESS_JOB = """
from databricks_bundle_decorators import job, task


@job(name="JOBPREFIX_serverless")
def serverless():
    @task
    def t(): ...

    t()
"""
CLASSIC_JOB = """
from databricks_bundle_decorators import job, job_cluster, task

OLD = job_cluster("old", spark_version="{spark_version}", node_type_id="i3.xlarge", num_workers=1)


@job(name="JOBPREFIX_classic", cluster=OLD)
def classic():
    @task
    def t(): ...

    t()
"""


def test_generate_refuses_a_serverless_environment_below_the_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path, SERVERLESS_JOB, tool='environment_version = "1"\n')
    code, out, err = run(["generate", "--project", str(tmp_path)], capsys)
    assert code == 1, out + err
    line = assert_one_error_line(err)
    assert (
        "environment_version '1' is older than dbxdec supports: the oldest is serverless "
        'environment 2 (Databricks Connect 15.4); set environment_version = "2" or later in '
        "[tool.dbxdec]"
    ) in line
    assert "serverless" in line and not (tmp_path / "resources").exists()


def test_generate_refuses_a_cluster_runtime_below_the_floor_and_accepts_the_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path / "old", CLASSIC_JOB.format(spark_version="14.3.x-scala2.12"))
    code, out, err = run(["generate", "--project", str(tmp_path / "old")], capsys)
    assert code == 1, out + err
    assert (
        "spark_version '14.3.x-scala2.12' is older than dbxdec supports: the oldest is "
        "Databricks Runtime 15.4 LTS"
    ) in assert_one_error_line(err)
    assert not (tmp_path / "old" / "resources").exists()

    make_project(tmp_path / "floor", CLASSIC_JOB.format(spark_version="15.4.x-photon-scala2.12"))
    code, out, err = run(["generate", "--project", str(tmp_path / "floor")], capsys)
    assert code == 0, out + err


@pytest.mark.parametrize(
    ("version", "below"),
    [
        ("0", True),
        ("1", True),
        ("1-scala-preview", True),
        ("2", False),
        ("4", False),
        ("4-scala-preview", False),
        ("${var.environment}", False),  # unknown until deploy: Databricks judges it
        ("", False),
    ],
)
def test_environment_versions_compare_as_numbers(version: str, below: bool) -> None:
    assert FLOOR_ENVIRONMENT_VERSION == 2
    assert environment_below_floor(version) is below


@pytest.mark.parametrize(
    ("spark_version", "below"),
    [
        ("13.3.x-scala2.12", True),
        ("14.3.x-cpu-ml-scala2.12", True),
        ("15.3.x-scala2.12", True),
        ("15.4.x-scala2.12", False),
        ("15.10.x-scala2.12", False),  # feature versions compare as numbers, not text
        ("16.4.x-photon-scala2.12", False),
        ("9.1.x-scala2.12", True),
        ("${var.spark_version}", False),  # unknown until deploy: Databricks judges it
        ("custom:image", False),
    ],
)
def test_runtime_versions_compare_as_numbers(spark_version: str, below: bool) -> None:
    assert FLOOR_RUNTIME == (15, 4)
    assert runtime_below_floor(spark_version) is below
