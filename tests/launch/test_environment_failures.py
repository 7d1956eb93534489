"""The workspace going dark in the middle of a backfill, through the real WorkspaceClient
against the Jobs API emulator: the launcher keeps going (runs go on in the workspace),
says since when it is unreachable, and ends with every key run once."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import read_ledger
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.policy.outage import OutageTracker
from databricks_bundle_decorators.launch.run.events import Counts, EventKind, LaunchEvent
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.launch.status.progress import LiveReporter, PlainReporter
from databricks_bundle_decorators.launch.workspace.workspace import (
    BACKFILL_CALL_SECONDS,
    BACKFILL_HTTP_SECONDS,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, keys_of
from .test_refusals import in_background
from .test_scheduler import EventSignals, day, make_ledger

UNREACHABLE = re.compile(
    r"workspace unreachable since \d\d:\d\d:\d\d \((?P<reason>[^)]*)\), retrying; "
    r"(?P<runs>\d+) runs? in flight"
)


def test_an_outage_mid_backfill_is_reported_and_every_key_still_runs_once(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    keys = [day(i) for i in range(6)]
    ledger = make_ledger(root, keys)
    emu.hold_runs = True  # the first three stay RUNNING until released
    signals = EventSignals()
    lines = io.StringIO()
    plain = PlainReporter(lines)

    def emit(event: LaunchEvent) -> None:
        plain(event)
        signals.append(event)

    # The SDK gives up on a dropped connection after 1 s instead of 300 s: the test's
    # stand-in for the launcher's bounded calls (BACKFILL_CALL_SECONDS).
    backend = DatabricksBackend(emu.workspace_client(retry_timeout_seconds=1), job_id)
    options = LaunchOptions(
        max_concurrent=3, poll_interval=0.01, max_poll_interval=0.1, retry_delay=0.01
    )
    runner = Scheduler(backend, ledger, options, emit=emit)

    with in_background(emu, runner) as result:
        emu.wait_for_runs(3, job_id=job_id)
        emu.set_faults(drop_rate=1.0)  # every API connection is closed without an answer
        signals.wait("unreachable")
        emu.release()  # meanwhile the runs go on, and end, in the workspace
        emu.hold_runs = False
        emu.set_faults()  # the workspace is back
        signals.wait("reachable")
        assert result.result(timeout=120) == "succeeded"

    (told, *_) = [e for e in signals.events if e.kind == "unreachable"]
    found = UNREACHABLE.fullmatch(told.message)
    assert found is not None, told.message
    assert found["runs"] == "3" and found["reason"]
    assert told.counts.running == 3 and told.counts.done == 0  # the progress stays honest
    (back,) = [e for e in signals.events if e.kind == "reachable"]
    assert re.fullmatch(r"workspace reachable again after \d+s", back.message)
    assert not [e for e in signals.events if e.kind in ("warning", "failed")]
    assert sorted(keys_of(emu, job_id)) == keys  # every key exactly once
    assert read_ledger(ledger.path).state == "succeeded"
    printed = lines.getvalue()
    assert re.search(r"^\d\d:\d\d:\d\d unreachable workspace unreachable since ", printed, re.M)
    assert "[0/6 done, 3 running, 0 failed, 3 left" in printed


def test_backfill_calls_are_bounded_so_an_outage_is_told_within_30_s() -> None:
    # Worst case: the outage begins just after a poll; the next one comes at most
    # max_poll_interval (15 s) later and gives up after one silent request plus the
    # SDK's first pause (at most 2 s), or after its retry budget plus one pause.
    give_up = max(BACKFILL_HTTP_SECONDS + 2, BACKFILL_CALL_SECONDS + 4)
    assert 15 + give_up < 30


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_tracker_tells_the_start_reminds_every_30_s_and_tells_the_end() -> None:
    clock = Clock()
    tracker = OutageTracker(clock=clock)
    assert tracker.pending(2) == []

    tracker.failed("connection refused")
    (first,) = tracker.pending(2)
    assert first[0] == "unreachable"
    assert first[1].endswith("(connection refused), retrying; 2 runs in flight")
    tracker.failed("no answer in time")  # the same outage: nothing new to say yet
    clock.now += 29
    assert tracker.pending(2) == []
    clock.now += 1
    ((kind, reminder),) = tracker.pending(1)
    assert kind == "unreachable" and reminder.endswith(
        "(no answer in time), retrying; 1 run in flight"
    )
    assert reminder.split(" (")[0] == first[1].split(" (")[0]  # still "since" the start

    clock.now += 333
    tracker.answered()
    assert tracker.pending(1) == [("reachable", "workspace reachable again after 6m03s")]
    tracker.answered()
    assert tracker.pending(1) == []


def test_the_live_display_shows_the_outage_until_the_workspace_answers() -> None:
    reporter = LiveReporter(Console(file=io.StringIO()))

    def shown(kind: EventKind, message: str) -> str:
        reporter(LaunchEvent(kind, 0.0, Counts(total=4, running=2), message=message))
        screen = Console(file=io.StringIO(), width=200)
        screen.print(reporter._render())
        assert isinstance(screen.file, io.StringIO)
        return screen.file.getvalue()

    dark = "workspace unreachable since 04:54:06 (connection refused), retrying; 2 runs in flight"
    assert dark in shown("unreachable", dark)
    back = shown("reachable", "workspace reachable again after 6m03s")
    assert dark not in back and "reachable: workspace reachable again after 6m03s" in back
