"""``dbxdec backfill JOB`` with no range means every key of the definition (issue 25
item 5): launched only with ``--all`` or after a yes on a terminal; elsewhere one line,
exit 2, nothing launched. ``--dry-run``, ``--rerun failed`` and ``catchup`` are not
asked."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, Cli, assert_one_error_line
from tests.launch.conftest import BACKFILL_PARAMS


class TerminalInput(io.StringIO):
    """What the user types, on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def on_a_terminal(monkeypatch: pytest.MonkeyPatch, typed: str) -> None:
    monkeypatch.setattr(sys, "stdin", TerminalInput(typed))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def launched(emu: JobsEmulator) -> int:
    """Runs started: a slow ``run-now`` is sent again with the same idempotency token
    (the launcher's overtaker), so requests may outnumber runs under load."""
    return len(emu.runs())


def no_ledgers(project: Path) -> bool:
    return not list(ledger_dir(project).glob("*.sqlite"))


@pytest.fixture
def regions(emu: JobsEmulator) -> int:
    """The four-key static job, deployed."""
    return emu.create_job("regions", parameters=BACKFILL_PARAMS)


def test_without_a_range_or_a_terminal_it_refuses_naming_the_count(
    dbxdec: Cli, emu: JobsEmulator, project: Path, regions: int
) -> None:
    code, out, err = dbxdec("backfill", "regions", *FAST)
    assert (code, out) == (2, "")
    assert assert_one_error_line(err) == (
        "Error: no range given, which means every key of regions's backfill definition, "
        "4 runs: pass --start/--end, --keys or --all"
    )
    assert launched(emu) == 0 and no_ledgers(project)

    code, _, err = dbxdec("backfill", "nightly", "--batch-size", "7", "--local")
    assert code == 2  # 366 days of 2024 in runs of 7 days, counted before Spark is needed
    assert "every key of nightly's backfill definition, 53 runs: " in assert_one_error_line(err)


def test_all_launches_every_key(dbxdec: Cli, emu: JobsEmulator, regions: int) -> None:
    code, out, err = dbxdec("backfill", "regions", "--all", *FAST)
    assert code == 0, out + err
    assert launched(emu) == 4
    assert sorted(r.job_parameters["backfill_key"] for r in emu.runs(regions)) == sorted(
        ["us", "eu", "jp", "au"]
    )


def test_a_dry_run_plans_every_key_without_all(
    dbxdec: Cli, emu: JobsEmulator, regions: int
) -> None:
    code, out, err = dbxdec("backfill", "regions", "--dry-run")
    assert (code, err) == (0, "")
    assert "Plan for regions: 4 runs, 4 keys" in out
    assert launched(emu) == 0


@pytest.mark.parametrize(
    "args",
    [["backfill", "regions", "--rerun", "failed"], ["catchup", "regions"]],
    ids=["rerun-failed", "catchup"],
)
def test_selections_from_history_are_not_asked(
    dbxdec: Cli, emu: JobsEmulator, regions: int, args: list[str]
) -> None:
    code, out, err = dbxdec(*args, *FAST)
    assert code == 0, out + err
    assert "--all" not in out + err


def test_on_a_terminal_it_asks_and_no_launches_nothing(
    dbxdec: Cli,
    emu: JobsEmulator,
    project: Path,
    regions: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_a_terminal(monkeypatch, "n\n")
    code, _, err = dbxdec("backfill", "regions", *FAST)
    assert code == 130
    assert "No range given: launch every key of regions's backfill definition, 4 runs?" in err
    assert launched(emu) == 0 and no_ledgers(project)


def test_on_a_terminal_yes_launches_every_key(
    dbxdec: Cli, emu: JobsEmulator, regions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_a_terminal(monkeypatch, "y\n")
    code, out, err = dbxdec("backfill", "regions", *FAST)
    assert code == 0, out + err
    assert launched(emu) == 4
