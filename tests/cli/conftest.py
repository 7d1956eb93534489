"""Fixtures of the in-process CLI tests: a project whose workspace is the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import write_project

from .clirun import Cli


@pytest.fixture
def project(tmp_path: Path, workspace_env: JobsEmulator) -> Path:
    """A project of the launch test pipelines; the environment points at the emulator."""
    return write_project(tmp_path / "proj")


@pytest.fixture
def dbxdec(project: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(project, capsys)
