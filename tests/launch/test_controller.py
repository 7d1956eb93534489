"""The controller of a detached backfill, as a real subprocess of the emulator (issue 28).

``--detach`` plans, writes the journal and starts one controller run; the controller
run (``python -m ...launch.control.entry``, started by the emulator with the token in
its environment) launches every run. Settings: see :mod:`.controller_fixtures`. Tests
sync on the emulator's ``wait_for`` conditions, never on sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import Workspace, open_workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


def test_detach_returns_once_the_controller_is_started_and_the_backfill_finishes_tokenless(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    processes = processes_of(emu)
    processes.hold_starts = True  # the controller's process starts when the test says
    detached = workspace.detach(registry, KEYS)
    # counted when --detach returned, no controller code having run yet: no run of the
    # job, one of the controller, whose process is held (else it could launch already)
    assert processes.held_starts() == 1 and processes.outputs() == []
    assert emu.run_now_bodies(workspace.job_id) == []
    assert len(emu.run_now_bodies(workspace.controller_job)) == 1
    processes.release_starts()
    assert detached.follow == f"dbxdec backfill watch {detached.backfill_id}"
    workspace.wait_backfill_done(len(KEYS))
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()
    ledger = read_journal(emu.workspace_client(), workspace.job_id, detached.backfill_id)
    assert ledger.state == "succeeded"
    assert [r.state for r in ledger.slices] == ["succeeded"] * len(KEYS)
    assert [r.result_state for r in workspace.emu.runs(workspace.controller_job)] == ["SUCCESS"]
    workspace.assert_tokenless()  # no token in any parameter, file or log
