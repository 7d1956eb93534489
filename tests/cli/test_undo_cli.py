"""``dbxdec backfill undo`` refusals and the ``backfill`` group, without Spark: unknown
ids, Databricks backfills (not yet), help, and the launcher forms that must keep working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
)
from tests.launch.undo_project import write_undo_project

from .clirun import assert_one_error_line, run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_undo_project(tmp_path / "proj")


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return run([*args, "--project", str(root)], capsys)


@pytest.mark.parametrize(
    ("backfill_id", "message"),
    [
        pytest.param(
            "undo_orders-20240101T000000-dead",
            "Error: no backfill 'undo_orders-20240101T000000-dead' in ",
            id="unknown",
        ),
        pytest.param("../../etc/passwd", "is not a backfill id", id="malformed"),
    ],
)
def test_an_unknown_backfill_id_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], backfill_id: str, message: str
) -> None:
    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes")
    assert code == 2, out + err
    assert message in assert_one_error_line(err)
    assert out == ""


def test_a_databricks_backfill_is_refused_as_not_yet_supported(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attempt = Attempt(1, "dbxdec-token-1", "succeeded", "5501")
    Ledger(
        ledger_dir(root) / "undo_orders-20240601T000000-beef.json",
        backfill_id="undo_orders-20240601T000000-beef",
        job="undo_orders",
        backend=BackendSpec("databricks", job_id=7, host="https://example.invalid"),
        options=LaunchOptions(),
        slices=[SliceRecord(0, ("2024-06-01",), {"backfill_key": "2024-06-01"}, (attempt,))],
    ).save()
    code, out, err = dbxdec(
        capsys, root, "backfill", "undo", "undo_orders-20240601T000000-beef", "--yes"
    )
    assert code == 2, out + err
    assert assert_one_error_line(err) == (
        "Error: backfill undo_orders-20240601T000000-beef ran on Databricks: undo is not yet "
        "supported there (only local backfills can be undone for now); nothing was restored"
    )


def test_backfill_help_shows_the_launcher_and_undo(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["backfill", "--help"], capsys)
    assert code == 0
    assert "Usage: dbxdec backfill [OPTIONS] [JOB]" in out
    assert "--resume ID" in out and "--max-concurrent" in out
    assert "Commands:\n  undo  Restore every Delta table backfill ID wrote" in out
    code, out, _ = run(["backfill", "undo", "--help"], capsys)
    assert code == 0
    assert "Usage: dbxdec backfill undo [OPTIONS] ID" in out
    assert all(option in out for option in ("--yes", "--force", "--dry-run", "--project"))


def test_the_launcher_forms_still_work_beside_undo(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys, root, "backfill", "undo_orders", "--keys", "2024-01-02", "--local", "--dry-run"
    )
    assert code == 0, out + err
    assert "Dry run: nothing was launched." in out
    code, out, err = dbxdec(capsys, root, "backfill", "--resume", "undo_orders-20240101T000000-x")
    assert code == 2
    assert "no backfill 'undo_orders-20240101T000000-x'" in assert_one_error_line(err)
    code, out, err = dbxdec(capsys, root, "backfill")
    assert code == 2
    assert assert_one_error_line(err) == "Error: missing JOB (or --resume ID)"


def test_a_job_named_undo_is_reached_with_an_option_first(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys,
        root,
        "backfill",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-02",
        "undo",
        "--local",
        "--dry-run",
        "--json",
    )
    assert code == 0, out + err
    plan = json.loads(out)
    assert plan["job"] == "undo"
    assert [run["keys"] for run in plan["runs"]] == [["2024-01-01"], ["2024-01-02"]]
    # as the first argument, 'undo' is the subcommand, and a plan option is refused
    code, out, err = dbxdec(capsys, root, "backfill", "undo", "--start", "2024-01-01")
    assert code == 2
    assert (
        "Error: No such option '--start'. To backfill a job named 'undo', put an option "
        "before its name: dbxdec backfill --start A --end B undo"
    ) in err
