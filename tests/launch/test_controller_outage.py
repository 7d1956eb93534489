"""A workspace outage under a detached backfill's controller is no failure (issue 28).

The outage is ``JobsEmulator.set_faults(drop_rate=1.0)``: every API connection is closed
without an answer while the runs go on in the workspace. It lasts until the emulator
has dropped :data:`DROPS` requests, which is longer than every client timeout and
back-off of the controller, set short here:

- each SDK call gives up after ``retry_timeout_seconds`` = 1 s, each request after
  ``http_timeout_seconds`` = 1 s (``--client_timeout=1``; the SDK sleeps at least 1 s
  between two tries of a dropped connection, so every call that gives up took >= 1 s);
- the scheduler sends an unanswered submission again after 2 s (``_UNREACHABLE_RETRY``);
  it polls at least every 0.05 s;
- the claim lasts 2 s and is renewed every 0.4 s (``--claim_ttl=2``): the outage outlives
  it, so the claim expires unrenewed and is taken again when the workspace answers;
- a journal segment whose create was not answered is sent again at the next save.

Eight dropped requests take longer than all of these (each SDK call that gives up drops
two connections a second or more apart: the outage lasts several seconds).

It ends with 0 runs cancelled, 0 keys failed, and every key succeeded exactly once. When
the claim is taken over meanwhile (as ``--resume ID --force`` from a second copy writes
it), the controller stops with the claim-lost code 7 and no key runs twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.guard.claims import ClaimRecord
from databricks_bundle_decorators.launch.guard.workspace_claims import claims_folder
from databricks_bundle_decorators.launch.ledger.journal import read_journal

from .controller_fixtures import Workspace, open_workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


DROPS = 8


def _until(condition, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Wait for ``condition`` (a counter of the emulator), checking every 0.05 s."""
    tick = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        tick.wait(0.05)
    raise TimeoutError(what)


def test_an_outage_longer_than_every_timeout_and_the_claim_fails_nothing(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    workspace.tune(client_timeout="1", claim_ttl="2")
    emu.default_duration = 1.0  # runs are in flight through the outage
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    emu.set_faults(drop_rate=1.0)
    _until(lambda: emu.faults["total"] >= DROPS, f"{DROPS} requests dropped")
    emu.set_faults()
    workspace.wait_backfill_done(len(KEYS), timeout=60)
    runs = emu.runs(workspace.job_id)
    assert [r for r in runs if r.result_state != "SUCCESS"] == []  # none cancelled or failed
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()
    ledger = read_journal(emu.workspace_client(), workspace.job_id, detached.backfill_id)
    assert ledger.state == "succeeded" and ledger.counts()["failed"] == 0
    assert workspace.attempts() == [0], workspace.outputs()  # one controller process, no retry


def test_a_claim_taken_over_during_the_outage_stops_the_controller_with_7(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    workspace.tune(client_timeout="1", claim_ttl="2")
    emu.hold_runs = True  # runs stay in flight: nothing finishes behind the test's back
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    emu.set_faults(drop_rate=1.0)
    _until(lambda: emu.faults["total"] >= DROPS, f"{DROPS} requests dropped")
    now = time.time()
    other = ClaimRecord(
        backfill_id=detached.backfill_id, job="nightly", job_id=workspace.job_id,
        host="a-second-copy", pid=1, user="someone@example.com", started_at=now,
        renewed_at=now, expires_at=now + 600, keys=tuple(KEYS), claim_id="0123456789abcdef",
    )  # fmt: skip
    path = f"{claims_folder(workspace.job_id)}/{detached.backfill_id}.json"
    emu.put_workspace_file(path, other.to_text().encode())  # the --force of a second copy
    emu.set_faults()
    emu.wait_for(
        lambda runs: any(r.job_id == workspace.controller_job and not r.active for r in runs),
        what="the controller stopped",
    )
    assert workspace.attempts()[0] == 7, workspace.outputs()
    assert "was taken over by backfill" in workspace.outputs()
    assert workspace.keys_run() == {k: 1 for k in KEYS[:4]}  # nothing launched after
    emu.release()
