"""Issue 40: one pipeline module that fails to import blocked every command for every job,
even a ``--dry-run`` of another job. Commands about one job now go on with one warning
line per failed module; the broken module's own jobs, ``validate`` and ``generate``
still fail with the import error's line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .clirun import Cli, own_registry

GOOD = """
from databricks_bundle_decorators import DailyBackfill, job, task


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"))
def iso_good():
    @task
    def t():
        pass

    t()
"""
BAD = "import no_such_module_for_dbxdec_tests  # the author's typo\n"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "proj"
    package = root / "src" / "isopipes"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text(GOOD)
    (package / "broken.py").write_text(BAD)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "iso"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["isopipes"]\n'
    )
    with own_registry("isopipes"):
        yield root


def test_a_broken_module_leaves_other_jobs_usable(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    days = ("--start", "2024-01-01", "--end", "2024-01-02", "--local")
    code, out, err = dbxdec("backfill", "iso_good", *days, "--dry-run")
    assert code == 0, out + err
    assert "Plan for iso_good: 2 runs" in out
    (warning,) = err.strip().splitlines()
    assert warning.startswith("warning: left out, as it failed to import: ")
    assert "broken.py" in warning and "no_such_module_for_dbxdec_tests" in warning

    code, out, err = dbxdec("status", "iso_good", *days)
    assert code == 0, out + err

    code, out, err = dbxdec("backfill", "iso_missing", *days, "--dry-run")
    assert code == 1, out + err  # it may be the broken module's: its error is the answer
    assert "no_such_module_for_dbxdec_tests" in err and "Traceback" not in err

    code, out, err = dbxdec("validate")
    assert code != 0 and "no_such_module_for_dbxdec_tests" in err, out + err
