"""A workspace outage longer than the claim's lifetime, through the real WorkspaceClient
against the Jobs API emulator: an outage is no failure and no Ctrl-C.

Settings of these tests (short, so an outage "longer than the claim" takes seconds):

- the claim lasts :data:`TTL` = 5 s of its own clock, a :class:`SteppedClock` the test
  moves forward (the outage outlives the claim by a step of the clock, not by waiting);
- the claim is renewed every :data:`RENEW_EVERY` = 0.01 s (real time);
- the SDK gives up on an unanswered call after ``retry_timeout_seconds`` =
  :data:`RETRY_SECONDS` = 1 s, each request after ``http_timeout_seconds`` =
  :data:`HTTP_SECONDS` = 2 s (the launcher's own budgets are 6 s and 8 s);
- runs last 0.05 s once released, and are polled at least every 0.1 s;
- the outage is ``JobsEmulator.set_faults(drop_rate=1.0)``: every API connection is
  closed without an answer, while the runs go on in the workspace.

The tests sync on the claim's clock readings (each renewal reads it once, first), the
launcher's events and the emulator's runs; never on sleeps.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.cli.output.launch_output import claim_lost_line
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.errors import EXIT_CODES
from databricks_bundle_decorators.launch.backends.errors import BackfillClaimLost
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    PreparedBackfill,
    plan_backfill,
)
from databricks_bundle_decorators.launch.ledger.claims import ClaimLost, ClaimRecord
from databricks_bundle_decorators.launch.ledger.lease import (
    WorkspaceClaims,
    claims_folder,
)
from databricks_bundle_decorators.launch.ledger.ledger import Ledger
from databricks_bundle_decorators.launch.run.events import LaunchEvent, LaunchSummary
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, keys_of
from .test_scheduler import day, make_ledger

TTL = 5.0
RENEW_EVERY = 0.01
RETRY_SECONDS = 1
HTTP_SECONDS = 2
T0 = 1_717_200_000.0  # 2024-06-01 00:00:00 UTC


class SteppedClock:
    """A claim's clock that the test moves; it counts its readings and can hold readers
    at a gate (the renewal thread reads it once at the start of every renewal)."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.reads = 0
        self.waiting = 0
        self._closed = False
        self._changed = threading.Condition()

    def __call__(self) -> float:
        with self._changed:
            self.reads += 1
            self._changed.notify_all()
            while self._closed:
                self.waiting += 1
                self._changed.notify_all()
                self._changed.wait()
                self.waiting -= 1
            return self.now

    def wait_reads(self, more: int) -> None:
        """Block until the clock has been read ``more`` times from now."""
        with self._changed:
            target = self.reads + more
            assert self._changed.wait_for(lambda: self.reads >= target, timeout=30)

    @contextmanager
    def gate(self) -> Iterator[None]:
        """Hold the next reader at the gate for the block (wait until one is there)."""
        with self._changed:
            self._closed = True
            assert self._changed.wait_for(lambda: self.waiting > 0, timeout=30)
        try:
            yield
        finally:
            with self._changed:
                self._closed = False
                self._changed.notify_all()


class Signals:
    """A reporter (JSON events in a list) with a threading.Event per event kind."""

    def __init__(self) -> None:
        self.events: list[LaunchEvent] = []
        self.summary: LaunchSummary | None = None
        self._seen: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def flag(self, kind: str) -> threading.Event:
        with self._lock:
            return self._seen.setdefault(kind, threading.Event())

    def start(self, total: int, header: str) -> None:
        pass

    def __call__(self, event: LaunchEvent) -> None:
        self.events.append(event)
        self.flag(event.kind).set()

    def finish(self, summary: LaunchSummary) -> None:
        self.summary = summary

    def messages(self) -> str:
        return "\n".join(e.message for e in self.events)


def short_client(emu: JobsEmulator) -> WorkspaceClient:
    return emu.workspace_client(
        retry_timeout_seconds=RETRY_SECONDS, http_timeout_seconds=HTTP_SECONDS
    )


@pytest.fixture
def job_id(emu: JobsEmulator) -> int:
    parameters = {**BACKFILL_PARAMS, "dbxdec_order": ""}
    return emu.create_job("nightly", parameters=parameters, max_concurrent_runs=100)


def planned(
    emu: JobsEmulator, root: Path, registry: Registry, first: int, last: int, **kw: bool
) -> PreparedBackfill:
    pacing = Pacing(max_concurrent=2, poll_interval=0.01)
    request = BackfillRequest("nightly", start=day(first), end=day(last), pacing=pacing, **kw)
    prepared = plan_backfill(
        request, root=root, registry=registry, warehouse=root / "wh", client=short_client(emu)
    )
    prepared.options = replace(prepared.options, max_poll_interval=0.1)  # no slow polls
    return prepared


class ToldClaims(WorkspaceClaims):
    """A workspace claim that sets :attr:`told` once the launcher was told it is lost."""

    told = threading.Event()

    @contextmanager
    def hold(self, ledger: Ledger, on_lost: ClaimLost) -> Iterator[None]:
        self.told = threading.Event()

        def tell(message: str) -> None:
            on_lost(message)
            self.told.set()

        with super().hold(ledger, tell):
            yield


def with_claim(prepared: PreparedBackfill, job_id: int, clock: SteppedClock) -> ToldClaims:
    """The claim of ``prepared``, with the test's lifetime, renewal pace and clock."""
    assert isinstance(prepared.guard, WorkspaceClaims)
    guard = ToldClaims(
        prepared.guard.client,
        job="nightly",
        job_id=job_id,
        ttl=TTL,
        renew_every=RENEW_EVERY,
        clock=clock,
    )
    prepared.guard = guard
    return guard


@contextmanager
def steering(emu: JobsEmulator) -> Iterator[ThreadPoolExecutor]:
    """A pool for the launchers; whatever the test asserts, the outage ends and the
    held runs are released before the pool waits for them."""
    with ThreadPoolExecutor(2) as pool:
        try:
            yield pool
        finally:
            emu.set_faults()
            emu.release()
            emu.hold_runs = False


def dark_renewal(emu: JobsEmulator, clock: SteppedClock) -> None:
    """Begin an outage and wait until a renewal has gone unanswered in it."""
    emu.set_faults(drop_rate=1.0)
    clock.wait_reads(2)  # the renewal begun after the outage began has ended


def test_an_outage_longer_than_the_claim_is_no_failure_and_the_backfill_goes_on(
    emu: JobsEmulator, root: Path, job_id: int, registry: Registry
) -> None:
    from databricks_bundle_decorators.launch.launcher import run_backfill

    emu.hold_runs = True  # two runs in flight through the outage, four waiting
    emu.default_duration = 0.05
    prepared = planned(emu, root, registry, 0, 5)
    clock = SteppedClock(time.time())
    guard = with_claim(prepared, job_id, clock)
    signals = Signals()
    with steering(emu) as pool:
        running = pool.submit(run_backfill, prepared, signals)
        emu.wait_for_runs(2, job_id=job_id)
        dark_renewal(emu, clock)
        clock.now += TTL + 60  # the outage outlives the claim
        clock.wait_reads(2)  # a renewal found it expired, in the dark
        emu.set_faults()  # the workspace is back
        clock.wait_reads(2)  # a renewal after the outage: the claim is taken again
        assert guard.lost is None and guard.record is not None
        assert guard.record.expires_at == clock.now + TTL
        emu.release()
        emu.hold_runs = False
        summary = running.result(timeout=120)

    assert summary.exit_code == 0 and summary.state == "succeeded"  # no --resume needed
    assert sorted(keys_of(emu, job_id)) == [day(i) for i in range(6)]  # each exactly once
    runs = emu.runs(job_id)
    assert [r.result_state for r in runs] == ["SUCCESS"] * 6  # 0 cancelled, 0 failed
    assert summary.counts.failed == 0 and not summary.failed
    kinds = {e.kind for e in signals.events}
    assert "unreachable" in kinds and "reachable" in kinds  # the outage is told
    assert not kinds & {"warning", "failed", "draining", "cancelling", "cancelled"}
    assert len([e for e in signals.events if e.kind == "unreachable"]) == 1  # no flood


def test_a_claim_taken_over_in_the_outage_stops_the_backfill_with_its_own_code(
    emu: JobsEmulator, root: Path, job_id: int, registry: Registry
) -> None:
    from databricks_bundle_decorators.launch.launcher import run_backfill

    emu.hold_runs = True
    emu.default_duration = 0.05
    first = planned(emu, root / "first", registry, 0, 5)
    clock = SteppedClock(time.time() - 3600)  # its claim is long expired in real time
    guard = with_claim(first, job_id, clock)
    ours, theirs = Signals(), Signals()
    with steering(emu) as pool:
        running = pool.submit(run_backfill, first, ours)
        emu.wait_for_runs(2, job_id=job_id)  # day 0 and 1 in flight, 2..5 waiting
        dark_renewal(emu, clock)
        with clock.gate():  # the first launcher's renewal waits here for the takeover
            clock.now += TTL + 60
            emu.set_faults()  # back for everyone: a second project copy takes over
            second = planned(emu, root / "second", registry, 2, 5, force=True)
            other = pool.submit(run_backfill, second, theirs)
            emu.wait_for_runs(4, job_id=job_id)
        assert guard.told.wait(timeout=30)  # the first launcher knows: it stops launching
        emu.release()
        emu.hold_runs = False
        summary = running.result(timeout=120)
        assert other.result(timeout=120).exit_code == 0

    assert sorted(keys_of(emu, job_id)) == [day(i) for i in range(6)]  # no key twice
    assert summary.exit_code == 7 == BackfillClaimLost.exit_code
    assert "taken over by another launcher" in EXIT_CODES[7]
    assert summary.state == "interrupted" and summary.counts.done == 2
    taken = (
        f"the claim of backfill {first.ledger.id} on job 'nightly' was taken over by "
        f"backfill {second.ledger.id} ("
    )
    assert summary.claim_lost.startswith(taken)
    (warning,) = [e.message for e in ours.events if e.kind == "warning"]
    assert warning == summary.claim_lost and warning.endswith("; launching no more runs")
    assert not {e.kind for e in ours.events} & {"draining", "cancelling", "cancelled"}
    line = claim_lost_line(summary)
    assert line.startswith(taken) and line.endswith(
        f"finish what is left with: dbxdec backfill --resume {first.ledger.id}"
    )
    assert "Ctrl-C" not in line + ours.messages()
    assert [r.result_state for r in emu.runs(job_id)] == ["SUCCESS"] * 6


def rival_claim(emu: JobsEmulator, job_id: int, keys: list[str], at: float) -> ClaimRecord:
    record = ClaimRecord(
        backfill_id="rival",
        job="nightly",
        job_id=job_id,
        host="elsewhere",
        pid=1,
        user="bob",
        started_at=at,
        renewed_at=at,
        expires_at=at + TTL,
        keys=tuple(keys),
        claim_id="f" * 16,
    )
    path = f"{claims_folder(job_id)}/rival.json"
    emu.put_workspace_file(path, record.to_text().encode())
    return record


@pytest.mark.parametrize("rival", [False, True])
def test_a_claim_expired_in_an_outage_is_taken_again_unless_a_live_rival_overlaps(
    emu: JobsEmulator, root: Path, job_id: int, rival: bool
) -> None:
    keys = [day(i) for i in range(3)]
    clock = SteppedClock(T0)
    holder = WorkspaceClaims(short_client(emu), job="nightly", job_id=job_id, ttl=TTL, clock=clock)
    record = holder.acquire(make_ledger(root, keys))
    emu.set_faults(drop_rate=1.0)
    assert holder.renew() is True and holder.unreached_since == T0  # unanswered: no loss
    emu.set_faults()
    clock.now = T0 + TTL + 60
    if rival:  # written (by a --force elsewhere) before this launcher's file was deleted
        rival_claim(emu, job_id, keys[1:], clock.now)
        assert holder.renew() is False
        assert holder.lost == (
            f"the claim of backfill {record.backfill_id} on job 'nightly' expired while the "
            "workspace was unreachable and was taken over by backfill rival (bob on "
            "elsewhere, started 2024-06-01 00:01:05 UTC); launching no more runs"
        )
        return
    assert holder.renew() is True and holder.lost is None
    path = holder.path(record.backfill_id)
    stored = json.loads(emu.workspace_files(path)[path])
    assert stored["claim_id"] == record.claim_id
    assert stored["expires_at"] == "2024-06-01T00:01:10.000+00:00"  # taken again
    assert holder.unreached_since is None


def test_a_claim_that_expired_without_an_outage_is_still_lost(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    clock = SteppedClock(T0)
    holder = WorkspaceClaims(short_client(emu), job="nightly", job_id=job_id, clock=clock)
    holder.acquire(make_ledger(root, [day(0)]))
    emu.set_faults(drop_rate=1.0)
    clock.now = T0 + 3600  # stalled past the expiry before any renewal was tried
    assert holder.renew() is False and holder.unreached_since is None
    assert (holder.lost or "").endswith("(was this launcher stalled?); launching no more runs")
