"""``dbxdec run --trigger table_update``: refused in one line where it cannot apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from .clirun import Cli, assert_one_error_line, run_project


def test_from_version_without_trigger_and_trigger_without_table_update_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(run_project(tmp_path), capsys)
    code, _, err = cli("run", "cli_daily", "--from-version", "3", "--local")
    assert code == 2
    assert "--from-version goes with --trigger table_update" in assert_one_error_line(err)
    code, _, err = cli("run", "cli_daily", "--trigger", "table_update", "--local")
    assert code == 2
    assert "has no triggered_by=TableUpdate(...)" in assert_one_error_line(err)


def test_a_file_arrival_trigger_is_refused_for_a_job_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(run_project(tmp_path), capsys)
    code, _, err = cli("run", "cli_daily", "--trigger", "file_arrival", "--local")
    assert code == 2
    assert "has no triggered_by=FileArrival(..., keys=...)" in assert_one_error_line(err)
    code, _, err = cli(
        "run", "cli_daily", "--trigger", "file_arrival", "--from-version", "1", "--local"
    )
    assert code == 2
    assert "--from-version goes with --trigger table_update" in assert_one_error_line(err)
