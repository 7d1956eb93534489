"""A segment whose create went unanswered is not a lost race: it is sent again, same
bytes, and an existing segment is compared with what was sent.

Settings: the SDK's clock is :class:`InstantClock` (its retry sleeps take no time, so no
test waits), and ``retry_timeout_seconds`` = 1 where the SDK must give up after the
first unanswered try; faults are scripted with ``JobsEmulator.inject_fault`` on
``/api/2.0/workspace/import``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.clock import Clock

from databricks_bundle_decorators.errors import LocalStateProblem, WorkspaceUnreachable
from databricks_bundle_decorators.launch.ledger.journal import (
    JournalLost,
    JournalUnreachable,
    create_journal,
    open_journal,
    read_journal,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .test_journal import JOB_ID, emu, new_ledger, segments, tick

__all__ = ["emu"]  # the fixture
IMPORT = "/api/2.0/workspace/import"


class InstantClock(Clock):
    """The SDK's clock: a retry's sleep moves it on at once."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def quick(emu: JobsEmulator, *, gives_up: bool) -> WorkspaceClient:
    """A client whose retries take no time; ``gives_up``: after the first unanswered try."""
    budget = {"retry_timeout_seconds": 1} if gives_up else {}
    return emu.workspace_client(clock=InstantClock(), **budget)


def test_a_create_whose_reply_was_lost_and_the_sdk_resent_goes_on(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    client = quick(emu, gives_up=False)
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    emu.inject_fault(IMPORT, kind="drop_after")  # applied, then the connection dropped
    tick(ledger, 0)

    ledger.save()  # the SDK sends it again: RESOURCE_ALREADY_EXISTS, and the bytes are ours

    assert emu.faults[f"drop_after {IMPORT}"] == 1 and emu.requests[IMPORT] == 3
    assert emu.requests["/api/2.0/workspace/export"] == 1
    tick(ledger, 1)
    ledger.save()
    assert sorted(segments(emu, ledger)) == [f"seg-00000000{n}.json" for n in (1, 2, 3)]
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()


def test_a_create_unanswered_until_the_sdk_gave_up_is_sent_again_same_bytes(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    client = quick(emu, gives_up=True)
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    emu.inject_fault(IMPORT, kind="drop_after")  # applied, reply lost; the SDK gives up
    tick(ledger, 0)

    ledger.save()  # our own re-send: it exists, equal bytes: our earlier create landed

    assert emu.faults[f"drop_after {IMPORT}"] == 1 and emu.requests[IMPORT] == 3
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()


def test_a_save_through_an_outage_keeps_its_segment_and_lands_it_after(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    client = quick(emu, gives_up=True)
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    emu.inject_fault(IMPORT, kind="drop_after")  # segment 2 lands, its reply is lost
    emu.set_faults(error_rate=1.0, statuses=(503,))  # then every request: 503
    tick(ledger, 0)
    with pytest.raises(JournalUnreachable) as unreachable:
        ledger.save()
    emu.set_faults()  # the workspace is back
    assert isinstance(unreachable.value, WorkspaceUnreachable)  # exit 5, not a lost race
    assert isinstance(unreachable.value, LocalStateProblem) and unreachable.value.exit_code == 5
    assert str(unreachable.value).startswith(
        f"cannot write journal segment 2 of backfill {ledger.id}: the workspace at "
    )
    assert ledger.dirty
    tick(ledger, 1)

    ledger.save()  # segment 2 again, same bytes (found, equal), then segment 3

    assert sorted(segments(emu, ledger))[-1] == "seg-000000003.json"
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()


def test_an_unanswered_create_then_another_writers_segment_is_a_lost_race(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    client = quick(emu, gives_up=True)
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    emu.inject_fault(IMPORT, kind="drop_before", count=3)  # never applied
    tick(ledger, 0)
    with pytest.raises(JournalUnreachable):
        ledger.save()
    other = open_journal(client, JOB_ID, ledger.id, writer="controller:9:0")
    tick(other, 5)
    other.save()  # segment 2 is the other writer's
    before = segments(emu, ledger)

    with pytest.raises(JournalLost, match="segment 2 was written by controller:9:0"):
        ledger.save()

    assert segments(emu, ledger) == before


def test_reading_a_journal_in_an_outage_is_one_line_and_exit_5(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    client = quick(emu, gives_up=True)
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    emu.set_faults(drop_rate=1.0)  # every connection closed without an answer

    with pytest.raises(WorkspaceUnreachable) as unreachable:
        read_journal(client, JOB_ID, ledger.id)

    message = str(unreachable.value)
    assert message.startswith(f"cannot reach the workspace at {emu.url} for the journal of ")
    assert "\n" not in message and unreachable.value.exit_code == 5
