"""A workspace outage under a detached backfill's controller is no failure (issue 28).

The outage is ``JobsEmulator.set_faults(drop_rate=1.0)``: every API connection is closed
without an answer while the runs go on in the workspace. Its length is measured on the
emulator's clock, from the first to the last request it dropped (``fault_times``), and it
lasts until all of these have happened, each observed, never slept on:

1. the controller has said the workspace is unreachable (a call of it gave up);
2. the claim's expiry, as written in its file, has passed on the clock the claim uses
   (``time.time()``: the controller's ``WorkspaceClaims`` default), and a request was
   dropped after that: the outage outlived the claim;
3. the measured outage is longer than every timeout and back-off below.

The timeouts and back-offs of the controller, set short here (:data:`BACKOFFS`):

- the SDK gives up on a call after ``retry_timeout_seconds`` = 1 s and on a request after
  ``http_timeout_seconds`` = 1 s (``--client_timeout=1``);
- between two tries of a dropped connection the SDK sleeps ``min(10, attempt)`` s plus up
  to 1 s of jitter, so, with a 1 s budget, a call sends one request and gives up after
  1-2 s (databricks-sdk ``retries.retried``): fewer than two drops per call, and calls run
  side by side (polls, control reads, claim renewals), so a count of drops says nothing
  of how long an outage lasted;
- the scheduler sends an unanswered submission again after 2 s (``_UNREACHABLE_RETRY``);
- status polls come at most 1 s apart (20 x ``--poll_interval=0.05``), control ops are
  read every 0.05 s (``--control_every``);
- the claim lasts 2 s (``--claim_ttl=2``) and is renewed every 0.4 s (a fifth of it);
- a journal segment whose create was not answered is sent again at the next save (no
  back-off of its own).

With no other launcher the controller takes its expired claim again when the workspace
answers and finishes: 0 runs cancelled, 0 keys failed, every key once, one process. When
a second copy takes the expired claim over meanwhile (``--force``, reaching the
workspace while the controller cannot), the controller stops with the claim-lost code 7
and its message; its retry (the task's ``max_retries: -1``) launches nothing, and no key
runs twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.claims import ClaimRecord
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.launch.ledger.lease import claims_folder
from databricks_bundle_decorators.launch.run.flights import _UNREACHABLE_RETRY
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import Workspace, open_workspace
from .test_claim_outage import Signals
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]
CLIENT_TIMEOUT = 1.0
CLAIM_TTL = 2.0
POLL_INTERVAL = 0.05  # the fixtures' --poll_interval and --control_every
BACKOFFS = {
    "SDK retry budget of a call (retry_timeout_seconds)": CLIENT_TIMEOUT,
    "SDK timeout of a request (http_timeout_seconds)": CLIENT_TIMEOUT,
    "SDK sleep between two tries (1 s + up to 1 s jitter)": CLIENT_TIMEOUT + 1.0,
    "scheduler re-sends an unanswered submission after": _UNREACHABLE_RETRY,
    "longest gap between status polls (20 x poll_interval)": 20 * POLL_INTERVAL,
    "control ops read every": POLL_INTERVAL,
    "claim renewed every (claim_ttl / 5)": CLAIM_TTL / 5,
    "claim lifetime (claim_ttl)": CLAIM_TTL,
}
LONGEST = max(BACKOFFS.values())
AGENT = "dbxdec-controller-under-test"
"""The controller processes' ``User-Agent`` mark (``upstream/<AGENT>``), so that an
outage may cut them off alone (``set_faults(user_agent=...)``)."""


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


@dataclass(frozen=True)
class Outage:
    """An outage as the emulator saw it: its first and last dropped request (monotonic
    seconds), and the claim's expiry (epoch seconds) it outlived."""

    first_drop: float
    last_drop: float
    claim: ClaimRecord
    drop_after_expiry: float  # time.time() when a request was dropped after the expiry

    @property
    def seconds(self) -> float:
        return self.last_drop - self.first_drop


def _claim(workspace: Workspace, backfill_id: str) -> ClaimRecord:
    path = f"{claims_folder(workspace.job_id)}/{backfill_id}.json"
    return ClaimRecord.from_text(workspace.emu.workspace_files(path)[path].decode())


def _next_drop(workspace: Workspace, what: str) -> None:
    """Until the emulator drops one more request than it has so far."""
    emu = workspace.emu
    seen = len(emu.fault_times)
    emu.wait_for(lambda _: len(emu.fault_times) > seen, timeout=30, what=what)


def _outage(workspace: Workspace, backfill_id: str, *, user_agent: str | None = None) -> Outage:
    """Begin an outage (of the clients whose User-Agent has ``user_agent``) and return
    once it is long enough (see the module docstring); it goes on until the caller ends
    it with ``set_faults()``."""
    emu = workspace.emu
    assert len(emu.fault_times) == 0  # the emulator's clock of this outage starts here
    emu.set_faults(drop_rate=1.0, user_agent=user_agent)
    processes_of(emu).wait_for_output("workspace unreachable since")
    while True:  # the claim's expiry, re-read: a renewal sent before may still land
        claim = _claim(workspace, backfill_id)
        assert claim.expires_at is not None
        if time.time() <= claim.expires_at:
            _next_drop(workspace, "a request dropped while the claim is live")
            continue
        _next_drop(workspace, "a request dropped after the claim expired")
        dropped_at = time.time()
        if _claim(workspace, backfill_id) == claim:
            break
    emu.wait_for(
        lambda _: emu.fault_times[-1] - emu.fault_times[0] > LONGEST,
        timeout=30,
        what=f"an outage longer than {LONGEST} s",
    )
    assert emu.faults["total"] == len(emu.fault_times)  # every fault of it is measured
    return Outage(emu.fault_times[0], emu.fault_times[-1], claim, dropped_at)


def _assert_long_enough(outage: Outage) -> None:
    for what, seconds in BACKOFFS.items():
        assert outage.seconds > seconds, f"the outage ({outage.seconds:.2f} s) <= {what}"
    assert outage.claim.expires_at is not None
    assert outage.claim.expires_at < outage.drop_after_expiry  # it outlived the claim


def test_an_outage_longer_than_every_timeout_and_the_claim_fails_nothing(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    workspace.tune(client_timeout=str(CLIENT_TIMEOUT), claim_ttl=str(CLAIM_TTL))
    emu.default_duration = 1.0  # runs are in flight through the outage
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    outage = _outage(workspace, detached.backfill_id)
    emu.set_faults()
    _assert_long_enough(outage)
    processes_of(emu).wait_for_output("workspace reachable again after")
    workspace.wait_backfill_done(len(KEYS), timeout=60)
    runs = emu.runs(workspace.job_id)
    assert [r for r in runs if r.result_state != "SUCCESS"] == []  # none cancelled or failed
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()
    ledger = read_journal(emu.workspace_client(), workspace.job_id, detached.backfill_id)
    assert ledger.state == "succeeded" and ledger.counts()["failed"] == 0
    assert workspace.attempts() == [0], workspace.outputs()  # one controller process, no retry
    assert [r.result_state for r in emu.runs(workspace.controller_job)] == ["SUCCESS"]
    assert "launching no more runs" not in workspace.outputs()  # the claim was taken again
    workspace.assert_tokenless()


def test_a_claim_taken_over_during_the_outage_stops_the_controller_with_7(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    processes = processes_of(emu)
    workspace.tune(client_timeout=str(CLIENT_TIMEOUT), claim_ttl=str(CLAIM_TTL))
    processes.extra_env.update(
        {"DATABRICKS_SDK_UPSTREAM": AGENT, "DATABRICKS_SDK_UPSTREAM_VERSION": "1"}
    )
    emu.hold_runs = True  # runs stay in flight: nothing finishes behind the test's back
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    outage = _outage(workspace, detached.backfill_id, user_agent=f"upstream/{AGENT}")
    # a second copy of the project, which reaches the workspace: keys 4 and 5 (not in
    # flight) with --force over the controller's expired claim
    request = BackfillRequest(
        "nightly", keys=tuple(KEYS[4:]), force=True, pacing=Pacing(max_concurrent=2)
    )
    second = plan_backfill(
        request,
        root=workspace.root / "second",
        registry=registry,
        warehouse=workspace.root / "wh",
        client=emu.workspace_client(),
    )
    signals = Signals()
    processes.hold_starts = True  # the controller's retry waits until the test lets it
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(run_backfill, second, signals)
        emu.wait_for(lambda runs: len(runs) >= 6, job_id=workspace.job_id, what="keys 4, 5")
        emu.set_faults()  # the controller reaches the workspace again: its claim is gone
        processes.wait_for_held_starts(1)  # it stopped; the platform retries it
        _assert_long_enough(outage)
        assert workspace.attempts() == [7], workspace.outputs()
        emu.release()
        emu.hold_runs = False
        assert other.result(timeout=60).exit_code == 0  # done: its claim is released
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()
    taken = (
        f"the claim of backfill {detached.backfill_id} on job 'nightly' was taken over by "
        f"backfill {second.ledger.id} ("
    )
    assert taken in workspace.outputs()
    processes.release_starts()  # the retry finds the claim free, and must not take it back
    emu.wait_for(
        lambda runs: not any(r.active for r in runs),
        job_id=workspace.controller_job,
        what="the controller's retry ended",
    )
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()  # none twice
    assert workspace.attempts() == [7, 0], workspace.outputs()
    retry = processes.outputs()[-1].stdout.decode()
    assert f"lost backfill {detached.backfill_id} earlier and does not take it back" in retry
    assert [r.result_state for r in emu.runs(workspace.job_id)] == ["SUCCESS"] * len(KEYS)
    workspace.assert_tokenless(signals.messages())
