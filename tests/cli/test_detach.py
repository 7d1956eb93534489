"""``--detach`` on the command line: refused with ``--local`` in one line (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundle.projects import DAILY_PIPELINE, make_project
from tests.cli.clirun import assert_one_error_line, run


@pytest.mark.parametrize(
    "argv",
    [
        ["backfill", "JOB", "--keys", "2024-01-02", "--local", "--detach"],
        ["catchup", "JOB", "--local", "--detach"],
    ],
)
def test_detach_with_local_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    p = make_project(tmp_path, DAILY_PIPELINE)
    argv = [a.replace("JOB", p.job("sales")) for a in argv]
    code, _, err = run([*argv, "--project", str(tmp_path)], capsys)
    assert code == 2
    assert "--detach hands the backfill to a controller run" in assert_one_error_line(err)
    assert not (tmp_path / ".dbxdec" / "backfills").exists()  # nothing planned, nothing saved
