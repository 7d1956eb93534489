"""A statement a SQL warehouse refuses is one line, never an SDK traceback: an unknown
warehouse answers 404 ``RESOURCE_DOES_NOT_EXIST`` (the emulator, as
``_emulator_statements`` documents), which is no trouble reaching the workspace, so it
used to escape ``workspace_errors`` raw and end a controller run with a traceback."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.errors import DbxdecError
from databricks_bundle_decorators.launch.workspace.first_watermark import (
    Statements,
    WatermarkUnreadable,
)
from databricks_bundle_decorators.testing import JobsEmulator


def test_an_unknown_warehouse_is_one_line_naming_it(emu: JobsEmulator) -> None:
    statements = Statements(emu.workspace_client(), "wh-gone", 0.01)
    with pytest.raises(WatermarkUnreadable) as refused:
        statements.rows("SELECT 1")
    assert isinstance(refused.value, DbxdecError)
    line = refused.value.render()
    assert "\n" not in line and "SQL warehouse wh-gone failed" in line
    assert "does not exist" in line
