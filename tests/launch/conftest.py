"""Fixtures for launcher tests: a small dbxdec project and the Jobs API emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.project import import_pipelines
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.testing import JobsEmulator

PIPELINES = """
from databricks_bundle_decorators import (
    DailyBackfill,
    StaticBackfill,
    get_backfill_key,
    job,
    task,
)


@task
def step() -> None:
    pass


@job(
    backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"),
    params={"source": "x"},
)
def nightly() -> None:
    step()


@job(backfill=StaticBackfill(keys=["us", "eu", "jp", "au"]))
def regions() -> None:
    step()


@job
def plain() -> None:
    step()


@task
def picky() -> None:
    if get_backfill_key() == "2024-01-02":
        raise RuntimeError("bad day")


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-01-31"))
def flaky() -> None:
    picky()
"""

BACKFILL_PARAMS = {"backfill_key": "", "backfill_start_key": "", "backfill_exact": "false"}


def write_project(root: Path, module: str = "launch_test_pipelines") -> Path:
    """A dbxdec project at ``root`` whose pipelines module is ``module``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "bfproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{module}"]\n'
    )
    (root / f"{module}.py").write_text(PIPELINES)
    return root


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="session")
def registry(project: Path) -> Registry:
    return import_pipelines(["launch_test_pipelines"], root=project)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh project root for ledgers (the pipelines come from ``project``)."""
    return tmp_path


def keys_of(emu: JobsEmulator, job_id: int) -> list[str]:
    """The ``backfill_key`` of every run the emulator created for the job, oldest first."""
    return [r.job_parameters.get("backfill_key", "") for r in emu.runs(job_id)]
