"""``dbxdec backfill cost`` beside the launcher: a reserved subcommand name, like undo."""

from __future__ import annotations

from pathlib import Path

import pytest

from .clirun import assert_one_error_line, run


def test_an_unknown_option_says_how_to_backfill_a_job_named_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["backfill", "cost", "--bogus", "--project", str(tmp_path)], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert "--bogus" in line and "dbxdec backfill --start A --end B cost" in line


def test_an_unknown_backfill_id_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dbxdec]\npipelines = []\n")
    code, out, err = run(
        ["backfill", "cost", "nightly-20240101T000000-dead", "--project", str(tmp_path)], capsys
    )
    assert code == 2 and out == ""
    assert "no backfill 'nightly-20240101T000000-dead'" in assert_one_error_line(err)
