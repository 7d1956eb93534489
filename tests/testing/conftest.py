"""The emulator's own tests: its default run duration, and a real WorkspaceClient."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.testing import JobsEmulator


@pytest.fixture
def emu() -> Iterator[JobsEmulator]:
    with JobsEmulator() as emulator:
        yield emulator


@pytest.fixture
def w(emu: JobsEmulator) -> WorkspaceClient:
    return emu.workspace_client()
