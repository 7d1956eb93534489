"""Fixtures of the bundle tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.framework_wheel import write_framework_wheel


@pytest.fixture(scope="session")
def framework_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The running dbxdec's real wheel, built once per test session (a few seconds)."""
    return write_framework_wheel(tmp_path_factory.mktemp("framework-wheel"))
