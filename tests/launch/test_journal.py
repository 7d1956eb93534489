"""The journal of a detached backfill, through the real WorkspaceClient against the
emulator's Workspace API: segments and snapshots read back to the same ledger, a bounded
number of reads, fencing, format refusal, steering requests, outages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.errors import LocalStateProblem
from databricks_bundle_decorators.launch.ledger.journal import (
    JournalLost,
    append_control,
    control_ops,
    create_journal,
    current_control,
    journal_folder,
    list_journals,
    open_journal,
    read_journal,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.testing import JobsEmulator

JOB_ID = 7
TOKEN = "dapi-journal-secret-0123456789"


@pytest.fixture
def emu() -> Iterator[JobsEmulator]:
    with JobsEmulator(token=TOKEN) as emulator:
        yield emulator


@pytest.fixture
def client(emu: JobsEmulator) -> WorkspaceClient:
    return emu.workspace_client()


def new_ledger(root: Path, n: int, *, host: str = "https://example") -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"k{i:04d}",)) for i in range(n)))
    return Ledger.create(
        root, plan, backend=BackendSpec("databricks", JOB_ID, host=host), options=LaunchOptions()
    )


def tick(ledger: Ledger, n: int) -> None:
    """The n-th scheduler tick: one slice gets an attempt, every 7th tick a state change."""
    record = ledger.slices[n % len(ledger.slices)]
    attempt = Attempt(len(record.attempts) + 1, f"t{n}", "running", str(n), None, float(n))
    ledger.update(record.with_attempt(attempt))
    if n % 7 == 6:
        ledger.set_state("interrupted" if ledger.state == "running" else "running")


def segments(emu: JobsEmulator, ledger: Ledger) -> dict[str, bytes]:
    folder = journal_folder(JOB_ID, ledger.id)
    return {p.rsplit("/", 1)[-1]: c for p, c in emu.workspace_files(folder).items()}


def test_a_journal_reads_back_as_the_sqlite_ledger_fed_the_same_saves(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 6), job_id=JOB_ID, writer="cli:test")
    twin = Ledger.from_json(tmp_path / "twin.sqlite", ledger.to_json())
    twin.save()
    for n in range(60):
        tick(ledger, n)
        ledger.save()
        tick(twin, n)
        twin.updated_at = ledger.updated_at  # the save's clock, not the journal's
        twin.save()
    back = read_journal(client, JOB_ID, ledger.id)
    assert back.to_json() == ledger.to_json()
    twin.close()
    expected = read_ledger(tmp_path / "twin.sqlite").to_json()
    assert {**back.to_json(), "updated_at": 0} == {**expected, "updated_at": 0}
    assert {"seg-000000001.json", "seg-000000061.json", "snap-000000050.json"} <= set(
        segments(emu, ledger)
    )


def test_the_second_writer_from_the_same_seq_loses_and_writes_nothing(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    first = open_journal(client, JOB_ID, ledger.id, writer="controller:1:0")
    second = open_journal(client, JOB_ID, ledger.id, writer="controller:2:0")
    tick(first, 0)
    first.save()
    before = segments(emu, ledger)
    tick(second, 1)
    with pytest.raises(JournalLost) as lost:
        second.save()
    assert str(lost.value) == (
        f"backfill {ledger.id}: journal segment 2 was written by controller:1:0; this "
        "controller stops"
    )
    assert segments(emu, ledger) == before
    with pytest.raises(JournalLost):  # and it stays lost
        second.save()
    assert segments(emu, ledger) == before


def test_a_journal_of_another_format_is_refused_in_one_line(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    folder = journal_folder(JOB_ID, ledger.id)
    future = {**json.loads(emu.workspace_files(folder)[f"{folder}/seg-000000001.json"])}
    future.update(format=2, seq=2, dbxdec="9.1")
    emu.put_workspace_file(f"{folder}/seg-000000002.json", json.dumps(future).encode())
    with pytest.raises(LocalStateProblem) as refused:
        read_journal(client, JOB_ID, ledger.id)
    assert str(refused.value) == (
        f"journal format 2 of backfill {ledger.id} is not this dbxdec's (1): use dbxdec 9.1"
    )


def test_control_ops_are_ordered_and_the_latest_wins(
    client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    assert current_control(control_ops(client, JOB_ID, ledger.id)) == "running"
    for op in ("pause", "unpause", "cancel"):
        append_control(client, JOB_ID, ledger.id, op, by="ann@example.com", at=1.0)
    ops = control_ops(client, JOB_ID, ledger.id)
    assert [(o.seq, o.op) for o in ops] == [(1, "pause"), (2, "unpause"), (3, "cancel")]
    assert current_control(ops) == "cancelled"
    (summary,) = list_journals(client, {"nightly": JOB_ID})
    assert (summary.backfill_id, summary.cancelled, summary.counts["pending"]) == (
        ledger.id,
        True,
        2,
    )
