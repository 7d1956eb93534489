"""What a new user stumbled over (issue 14), through the real entry point at 80 columns
with NO_COLOR: the id --resume takes, the status page, help texts and hints."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import pytest

from databricks_bundle_decorators import task
from databricks_bundle_decorators.errors import DefinitionError
from databricks_bundle_decorators.testing import JobsEmulator
from tests.bundle.projects import DAILY_PIPELINE, make_project

from .clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line, run

ID = re.compile(r"\bnightly-\d{8}T\d{6}-[0-9a-f]{4}\b")


@pytest.fixture(autouse=True)
def no_colour_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "40")


def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout says it is a TTY (called in the test: capsys swaps stdout at the call)."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def plain(text: str) -> str:
    """``text`` without the bold and dim escapes NO_COLOR leaves (it removes colour only)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def launch(dbxdec: Cli, emu: JobsEmulator) -> tuple[str, int]:
    """A backfill of six days, 04-03 failing: its id and the job's id."""
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-04-03", result="FAILED", message="table locked")
    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", "2024-04-01", "--end", "2024-04-06", *FAST
    )
    assert code == 1
    found = ID.search(out)
    assert found is not None, out
    return found.group(0), job_id


# -- 4: the backfill id, whole ----------------------------------------------------------------


def test_backfills_at_80_columns_prints_whole_ids_and_when_they_started(
    dbxdec: Cli, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    backfill, _ = launch(dbxdec, emu)
    on_a_terminal(monkeypatch)
    code, out, err = dbxdec("backfills")
    assert (code, err) == (0, "")
    lines = plain(out).splitlines()
    assert all(len(line) <= 80 for line in lines), out
    assert "…" not in out
    header = next(line for line in lines if " id " in line)
    assert "started" in header
    row = next(line for line in lines if backfill in line)  # one piece, on one line
    assert re.search(r"\d{4}-\d\d-\d\d", row) and "failed" in row


# -- 7: the HTML status page ------------------------------------------------------------------


def test_the_status_page_explains_failures_and_is_readable_by_others(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    backfill, job_id = launch(dbxdec, emu)
    page = project / "status.html"
    previous = os.umask(0o027)
    try:
        code, _, err = dbxdec(
            "status", "nightly", "--start", "2024-04-01", "--end", "2024-04-06", "--html", str(page)
        )
        assert stat.S_IMODE(page.stat().st_mode) == 0o640
    finally:
        os.umask(previous)
    assert (code, err) == (0, ""), err
    html = page.read_text(encoding="utf-8")
    [failed] = [r for r in emu.runs(job_id) if r.result_state == "FAILED"]
    assert f'title="2024-04-03: failed, run {failed.run_id}: FAILED: table locked"' in html
    failures = html[html.index("Failed keys (1)") :]
    assert f"run {failed.run_id}</a>" in failures and "table locked" in failures
    assert re.search(rf'<a href="[^"]*{failed.run_id}[^"]*">run {failed.run_id}</a>', failures)
    made = re.search(r"Made (\S+) from workspace (\S+), job nightly \(job id (\d+)\)", html)
    assert made is not None and made.group(2) == emu.url and made.group(3) == str(job_id)
    assert f"backfill {backfill}" in html

    code, _, _ = dbxdec(
        "status", "nightly", "--start", "2024-04-01", "--end", "2024-04-06", "--html", str(page)
    )
    assert code == 0 and stat.S_IMODE(page.stat().st_mode) == 0o644  # the usual umask 022


def test_status_without_colour_tells_the_states_apart(dbxdec: Cli, emu: JobsEmulator) -> None:
    launch(dbxdec, emu)
    code, out, _ = dbxdec("status", "nightly", "--start", "2024-04-01", "--end", "2024-04-08")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("2024-04"))
    assert row.split()[1:] == ["■", "■", "✗", "■", "■", "■", "·", "·"]
    assert "■ succeeded 5  ✗ failed 1  ○ running 0  · missing 2" in out


# -- 8: help texts and the order of checks ----------------------------------------------------


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run([command, "--help"], capsys)
    assert (code, err) == (0, "")
    return " ".join(out.split())  # click wraps at 80 columns


def option_help(text: str, option: str) -> str:
    """The help of ``option`` in a flattened --help text."""
    found = re.search(rf"{re.escape(option)} (.*?)(?= -[-a-z]|$)", text)
    assert found is not None, text
    return found.group(1)


def test_status_help_says_local_reads_the_ledgers(capsys: pytest.CaptureFixture[str]) -> None:
    local = option_help(help_of("status", capsys), "--local")
    assert "Spark" not in local and "ledgers" in local


def test_validate_help_shows_no_development_path(capsys: pytest.CaptureFixture[str]) -> None:
    schema = option_help(help_of("validate", capsys), "--schema FILE")
    assert "../shared" not in schema and "skipped" in schema


def test_backfills_help_documents_project(capsys: pytest.CaptureFixture[str]) -> None:
    project = option_help(help_of("backfills", capsys), "--project DIRECTORY")
    assert project.startswith("Project directory")


def test_deploy_names_an_unknown_target_before_a_missing_databricks_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, err = run(["deploy", "--project", str(tmp_path), "-t", "staging"], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert "staging" in line and "Databricks CLI" not in line


# -- 6: names from the earlier databricks-bundle-decorators releases --------------------------


def test_backfill_reverse_points_at_order_reverse(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["backfill", "nightly", "--reverse"], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert "'--order reverse'" in line and "--rerun" not in line


def test_task_all_partitions_names_what_replaces_it() -> None:
    with pytest.raises(DefinitionError) as raised:

        @task(all_partitions=True)
        def aggregate(rows: object) -> None: ...

    message = str(raised.value)
    assert "unknown setting" not in message
    assert "all_partitions(extract())" in message and "task 'aggregate'" in message
