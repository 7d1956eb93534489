"""Every command that needs a project, run where there is none (issue 25 item 8): one
line naming the folder and what to do, exit 2 -- never advice about a pyproject.toml
that does not exist, nor "No backfills yet"."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.project import project_root
from databricks_bundle_decorators.errors import UsageError
from tests.bundle.projects import DAILY_PIPELINE, make_project

from .clirun import assert_one_error_line, run

NEEDS_A_PROJECT = [
    ["backfills"],
    ["backfills", "--job", "nightly"],
    ["backfill", "nightly", "--keys", "2024-01-01", "--local"],
    ["backfill", "nightly", "--keys", "2024-01-01", "--dry-run"],
    ["backfill", "--resume", "nightly-20240101T000000-abcd"],
    ["backfill", "undo", "nightly-20240101T000000-abcd"],
    ["catchup", "nightly", "--local"],
    ["status", "nightly", "--local"],
    ["run", "nightly", "--local"],
    ["validate"],
    ["generate"],
    ["deploy", "-t", "dev"],
]


@pytest.mark.parametrize("argv", NEEDS_A_PROJECT, ids=lambda argv: " ".join(argv[:2]))
def test_outside_a_project_every_command_says_so_in_one_line(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2, (out, err)
    assert assert_one_error_line(err) == (
        f"Error: not in a dbxdec project (no pyproject.toml with [tool.dbxdec] in "
        f"{tmp_path.resolve()} or its parents): run dbxdec init, or pass --project"
    )
    assert "No backfills yet" not in out
    assert not (tmp_path / ".dbxdec").exists()  # nothing written where there is no project


def test_project_names_the_folder_it_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    code, _, err = run(["backfills", "--project", str(elsewhere)], capsys)
    assert code == 2
    assert f"in {elsewhere.resolve()} or its parents" in assert_one_error_line(err)


def test_inside_a_project_and_below_it_the_commands_find_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    below = tmp_path / "src" / "deep"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    assert project_root() == tmp_path.resolve()
    code, out, err = run(["backfills"], capsys)
    assert (code, out, err) == (0, "No backfills yet.\n", "")


def test_a_folder_with_ledgers_but_no_settings_still_lists_them(tmp_path: Path) -> None:
    """Backfills launched with --pipelines in a folder without [tool.dbxdec] stay
    reachable by backfills, --resume and undo."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(UsageError, match="not in a dbxdec project"):
        project_root(tmp_path)
    (tmp_path / ".dbxdec").mkdir()
    assert project_root(tmp_path) == tmp_path.resolve()
