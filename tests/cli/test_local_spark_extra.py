"""Local commands without PySpark or Delta Lake: one line saying what to install, exit 3
(a broken environment), before any local work starts (launch/backends/errors.py)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.backends.errors import missing_local_spark_modules
from tests.bundle.projects import DAILY_PIPELINE, make_project
from tests.cli.clirun import assert_one_error_line, run

real_find_spec = importlib.util.find_spec


def _without(*hidden: str) -> object:
    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name in hidden else real_find_spec(name, package)

    return find_spec


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """The project folder and its daily job's name."""
    root = tmp_path / "project"
    return root, make_project(root, DAILY_PIPELINE).job("sales")


def test_this_environment_has_both() -> None:
    assert missing_local_spark_modules() == []


@pytest.mark.parametrize(
    ("hidden", "named"),
    [(("pyspark", "delta"), "pyspark and delta"), (("delta",), "delta")],
    ids=["no-pyspark", "no-delta-spark"],
)
@pytest.mark.parametrize("command", ["run", "backfill"])
def test_local_runs_say_to_install_the_spark_extra(
    command: str,
    hidden: tuple[str, ...],
    named: str,
    project: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, job = project
    monkeypatch.setattr(importlib.util, "find_spec", _without(*hidden))
    keys = ["--key", "2024-01-02"] if command == "run" else ["--start", "2024-01-02"]
    argv = [command, job, *keys, "--local", "--project", str(root)]
    code, _, err = run([*argv, "--end", "2024-01-03"] if command == "backfill" else argv, capsys)
    assert code == 3
    assert assert_one_error_line(err) == (
        f'Error: local runs need PySpark and Delta Lake ({named} not installed): pip install "pyspark==4.0.1" "delta-spark==4.0.1"'
    )
    assert not (root / ".dbxdec").exists()  # no ledger, no warehouse: nothing started


def test_plans_and_status_need_no_spark(
    project: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, job = project
    monkeypatch.setattr(importlib.util, "find_spec", _without("pyspark", "delta"))
    dry = ["backfill", job, "--start", "2024-01-02", "--end", "2024-01-03"]
    code, out, err = run([*dry, "--local", "--dry-run", "--project", str(root)], capsys)
    assert (code, err) == (0, "")
    assert "Dry run: nothing was launched." in out
    code, out, err = run(["status", job, "--local", "--project", str(root)], capsys)
    assert (code, err) == (0, "")
