"""dbxdec deploy, through the real entry point, with a stand-in Databricks CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from databricks_bundle_decorators import __version__
from tests.bundle.projects import DAILY_PIPELINE, fake_framework_wheel, make_project
from tests.cli.clirun import assert_one_error_line, run, stand_in_databricks

# -- deploy -----------------------------------------------------------------------------------------


def test_deploy_validates_then_runs_the_databricks_cli(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(project, DAILY_PIPELINE)
    fake_framework_wheel(project / "wheels")
    record = tmp_path / "argv.json"
    stand_in_databricks(tmp_path / "bin", record, exit_code=3)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run(
        [
            "deploy",
            "--project",
            str(project),
            "-t",
            "prod",
            "--profile",
            "ws",
            "--",
            "--force-lock",
        ],
        capfd,
    )
    assert code == 3  # the Databricks CLI's exit code, passed through
    assert "'databricks bundle deploy' failed with exit code 3" in assert_one_error_line(err)
    called = json.loads(record.read_text(encoding="utf-8"))
    assert called["argv"] == [
        "bundle",
        "deploy",
        "--target",
        "prod",
        "--profile",
        "ws",
        "--force-lock",
    ]
    assert Path(called["cwd"]) == project.resolve()
    assert "Deploying resources... (stand-in)" in out
    assert not (project / "resources").exists()  # databricks.yml loads the jobs itself


def test_deploy_generates_yaml_when_the_bundle_includes_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    p = make_project(
        project, DAILY_PIPELINE, bundle="bundle:\n  name: {name}\ninclude:\n  - resources/*.yml\n"
    )
    fake_framework_wheel(project / "wheels")
    record = tmp_path / "argv.json"
    stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, _ = run(["deploy", "--project", str(project)], capsys)
    assert code == 0
    assert json.loads(record.read_text(encoding="utf-8"))["argv"] == ["bundle", "deploy"]
    assert sorted(p.name for p in (project / "resources").iterdir()) == sorted(
        [  # the jobs, and the controller of detached backfills (docs/guides/long-backfills.md)
            "dbxdec_controller.job.yml",
            f"{p.job('nightly')}.job.yml",
            f"{p.job('sales')}.job.yml",
        ]
    )


def test_deploy_stops_before_the_cli_when_validation_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(
        project,
        DAILY_PIPELINE
        + "\n@job(name='JOBPREFIX_typo', max_concurent_runs=2)\ndef typo():\n    @task\n    def t(): ...\n    t()\n",
    )
    record = tmp_path / "argv.json"
    stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert code == 1
    assert "nothing was deployed" in assert_one_error_line(err)
    assert not record.exists()


def test_deploy_without_the_databricks_cli_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, err = run(["deploy", "--project", str(tmp_path)], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert "Databricks CLI" in line and "install" in line and "https://docs.databricks.com" in line


def test_deploy_refuses_a_framework_wheel_of_another_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(project, DAILY_PIPELINE)
    record = tmp_path / "argv.json"
    stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert f"./wheels/dbxdec-{__version__}-py3-none-any.whl not found" in line
    assert "run 'dbxdec wheel'" in line

    fake_framework_wheel(project / "wheels", version="0.0.9")
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert code == 2
    assert "(wheels/ holds dbxdec 0.0.9); this is dbxdec" in assert_one_error_line(err)

    pinned = project / "pyproject.toml"
    pinned.write_text(
        pinned.read_text(encoding="utf-8")
        + 'framework_wheel = "wheels/dbxdec-0.0.9-py3-none-any.whl"\n',
        encoding="utf-8",
    )
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert f"is dbxdec 0.0.9, but this is dbxdec {__version__}" in line
    assert not record.exists()  # the Databricks CLI never ran


def test_deploying_dbxdec_itself_needs_no_second_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(project, DAILY_PIPELINE, distribution="dbxdec")
    record = tmp_path / "argv.json"
    stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert (code, err) == (0, "")
    assert json.loads(record.read_text(encoding="utf-8"))["argv"][:2] == ["bundle", "deploy"]


TRIGGERED_PIPELINE = """\
from databricks_bundle_decorators import DailyBackfill, TableUpdate, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

ORDERS = source("main.raw.orders", event_time="ts")


@job(name="orders_daily", backfill=DailyBackfill("2024-01-01", lookback=1), sources=[ORDERS],
     triggered_by=TableUpdate([ORDERS]))
def orders_daily():
    @task(io_manager=SparkTableIoManager("main.out.orders", partition_column="day"))
    def count():
        ...

    count()
"""


def test_deploy_without_a_warehouse_says_the_first_triggered_run_needs_from_version(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(project, TRIGGERED_PIPELINE)
    fake_framework_wheel(project / "wheels")
    stand_in_databricks(tmp_path / "bin", tmp_path / "argv.json", exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("DATABRICKS_WAREHOUSE_ID", raising=False)
    code, out, err = run(["deploy", "--project", str(project), "-t", "prod"], capfd)
    assert code == 0, err
    assert out.splitlines()[-1] == (
        "job 'orders_daily': no SQL warehouse to record its sources' versions through "
        "(pass --warehouse-id W or set DATABRICKS_WAREHOUSE_ID), so its first triggered "
        "run needs --from-version N"
    )
