"""The journal of a detached backfill, through the real WorkspaceClient against the
emulator's Workspace API: segments and snapshots read back to the same ledger, a bounded
number of reads, fencing, format refusal, steering requests, outages."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from databricks.sdk import WorkspaceClient
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.errors import LocalStateProblem, UsageError
from databricks_bundle_decorators.launch.ledger.journal import (
    PART_BYTES,
    JournalFollower,
    JournalLost,
    JournalStore,
    append_control,
    append_to,
    create_journal,
    current_control,
    journal_folder,
    journal_place,
    open_journal,
    read_controls,
    read_journal,
    read_state,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    read_ledger,
)
from databricks_bundle_decorators.launch.ledger.place import LocalPlace
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.testing import JobsEmulator

JOB_ID = 7
_IDS = itertools.count(1)
TOKEN = "dapi-journal-secret-0123456789"


@pytest.fixture
def emu() -> Iterator[JobsEmulator]:
    with JobsEmulator(token=TOKEN) as emulator:
        yield emulator


@pytest.fixture
def client(emu: JobsEmulator) -> WorkspaceClient:
    return emu.workspace_client()


def new_ledger(root: Path, n: int, *, host: str = "https://example") -> Ledger:
    """A new ledger of ``n`` one-key slices, its id unique in the session."""
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"k{i:04d}",)) for i in range(n)))
    return Ledger.create(
        root,
        plan,
        backend=BackendSpec("databricks", JOB_ID, host=host),
        options=LaunchOptions(),
        backfill_id=f"nightly-20240101T000000-{next(_IDS):04x}",
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


def test_reading_a_500_save_journal_takes_one_list_one_snapshot_and_few_segments(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 8), job_id=JOB_ID, writer="cli:test")
    for n in range(520):
        tick(ledger, n)
        ledger.save()
    emu.requests.clear()

    back = read_journal(client, JOB_ID, ledger.id)

    assert back.to_json() == ledger.to_json()
    assert emu.requests["/api/2.0/workspace/list"] == 1
    assert emu.requests["/api/2.0/workspace/export"] == 1 + 21  # snap-500, seg-501..521
    assert emu.requests["total"] == 22 + 1


def test_a_refused_snapshot_is_written_at_the_next_segment(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(
        client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test", snapshot_every=4
    )
    emu.inject_fault("/api/2.0/workspace/import", kind="error", status=400, skip=3)
    for n in range(4):  # segments 2..5; the snapshot of segment 4 is refused
        tick(ledger, n)
        ledger.save()
    assert {"snap-000000004.json", "snap-000000005.json"} & set(segments(emu, ledger)) == {
        "snap-000000005.json"
    }


def test_a_writer_that_died_before_its_snapshot_is_caught_up_by_the_next(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(
        client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test", snapshot_every=4
    )
    emu.inject_fault("/api/2.0/workspace/import", kind="error", status=400, skip=3)
    for n in range(3):  # segments 2..4; the snapshot of segment 4 is refused, then it dies
        tick(ledger, n)
        ledger.save()
    assert "snap-000000004.json" not in segments(emu, ledger)

    again = open_journal(client, JOB_ID, ledger.id, writer="controller:1:0", snapshot_every=4)

    assert again.to_json() == ledger.to_json()
    assert "snap-000000004.json" in segments(emu, ledger)  # 4 segments read: caught up
    emu.requests.clear()
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()
    assert emu.requests["/api/2.0/workspace/export"] == 1


def test_no_token_in_any_journal_object(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(
        client, new_ledger(tmp_path, 4, host=emu.url), job_id=JOB_ID, writer="cli:test"
    )
    for n in range(55):
        tick(ledger, n)
        ledger.save()
    append_control(client, JOB_ID, ledger.id, "pause", by="ann@example.com")
    files = emu.workspace_files("/")
    assert len(files) == 58 and any(emu.url.encode() in c for c in files.values())
    assert [p for p, c in files.items() if TOKEN.encode() in c] == []


@pytest.fixture(scope="module")
def shared_emu() -> Iterator[JobsEmulator]:
    with JobsEmulator(token=TOKEN) as emulator:
        yield emulator


STATES = st.sampled_from(["submitting", "running", "succeeded", "failed", "cancelled", "rejected"])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("attempt"), st.integers(0, 50), STATES),
        st.tuples(st.just("rebatch"), st.integers(0, 12), st.integers(1, 9)),
        st.tuples(st.just("state"), st.sampled_from(["running", "interrupted", "succeeded"])),
        st.tuples(st.just("save")),
    ),
    max_size=24,
)


def step(ledger: Ledger, action: tuple[Any, ...]) -> None:
    kind = action[0]
    if kind == "attempt" and ledger.slices:
        record = ledger.slices[action[1] % len(ledger.slices)]
        number = len(record.attempts) + 1
        ledger.update(record.with_attempt(Attempt(number, f"t{number}", action[2], str(number))))
    elif kind == "rebatch":  # keep the first slices, re-plan the rest (grow or shrink)
        keep, count = min(action[1], len(ledger.slices)), action[2]
        fresh = [SliceRecord(i, (f"r{i}-{count}",), {"n": str(count)}) for i in range(count)]
        ledger.slices = [*ledger.slices[:keep], *fresh[keep:]][: max(keep, count)]
    elif kind == "state":
        ledger.set_state(action[1])
    elif kind == "save":
        ledger.save()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), steps=STEPS, part_bytes=st.sampled_from([PART_BYTES, 400]))
def test_any_sequence_of_saves_reads_back_as_the_ledger(
    shared_emu: JobsEmulator, n: int, steps: list[tuple[Any, ...]], part_bytes: int
) -> None:
    client = shared_emu.workspace_client()
    ledger = new_ledger(Path("unused"), n)
    folder = journal_folder(JOB_ID, ledger.id)
    client.workspace.mkdirs(folder)
    store = JournalStore(
        journal_place(client, JOB_ID, ledger.id), writer="cli:p", next_seq=1, snapshot_every=3
    )
    store.part_bytes = part_bytes  # 400: a part per one or two slices
    ledger.bind(store)
    ledger.save()
    for action in steps:
        step(ledger, action)
        if action[0] == "save":
            assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()
    ledger.save()
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()
    again = open_journal(client, JOB_ID, ledger.id, writer="cli:q", snapshot_every=3)
    assert again.to_json() == ledger.to_json()


def test_objects_past_the_part_size_are_written_in_parts_and_read_whole(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = new_ledger(tmp_path, 40)
    folder = journal_folder(JOB_ID, ledger.id)
    client.workspace.mkdirs(folder)
    store = JournalStore(
        journal_place(client, JOB_ID, ledger.id), writer="cli:test", next_seq=1, snapshot_every=3
    )
    store.part_bytes = 1_500  # about 10 fresh slices a part
    ledger.bind(store)
    for n in range(40):
        ledger.save()
        tick(ledger, n)
    ledger.save()

    names = sorted(segments(emu, ledger))
    parts = [n for n in names if n.startswith("seg-000000001.") and n != "seg-000000001.json"]
    nonce = parts[0].split(".")[1]
    assert parts == [f"seg-000000001.{nonce}.p{k:03d}.json" for k in range(1, 5)]
    assert any(n.startswith("snap-000000039.") and n.endswith(".p001.json") for n in names)
    assert max(len(c) for c in emu.workspace_files(folder).values()) <= 1_500
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()


def test_parts_of_a_segment_whose_writer_died_before_it_are_ignored(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 3), job_id=JOB_ID, writer="cli:test")
    folder = journal_folder(JOB_ID, ledger.id)
    emu.put_workspace_file(f"{folder}/seg-000000002.dead0000.p001.json", b'{"format":1}')
    assert read_journal(client, JOB_ID, ledger.id).to_json() == ledger.to_json()
    again = open_journal(client, JOB_ID, ledger.id, writer="controller:1:0")
    tick(again, 0)
    again.save()
    assert read_journal(client, JOB_ID, ledger.id).to_json() == again.to_json()


def test_a_second_journal_of_the_same_backfill_is_refused_in_one_line(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:a")
    before = segments(emu, ledger)
    twin = Ledger.from_json(tmp_path / "twin.sqlite", ledger.to_json())
    with pytest.raises(UsageError) as refused:
        create_journal(client, twin, job_id=JOB_ID, writer="cli:b")
    assert str(refused.value) == (
        f"backfill {ledger.id} already has a journal in the workspace "
        f"({journal_folder(JOB_ID, ledger.id)}): follow it with: dbxdec backfill watch "
        f"{ledger.id}"
    )
    assert segments(emu, ledger) == before


def test_a_journal_missing_a_segment_is_damaged_in_one_line_and_a_view_is_read_only(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    for n in range(3):
        tick(ledger, n)
        ledger.save()
    view = read_journal(client, JOB_ID, ledger.id)
    with pytest.raises(LocalStateProblem, match="was read for viewing"):
        view.save()
    client.workspace.delete(f"{journal_folder(JOB_ID, ledger.id)}/seg-000000003.json")

    with pytest.raises(LocalStateProblem) as damaged:
        read_journal(client, JOB_ID, ledger.id)

    assert str(damaged.value) == (
        f"the journal of backfill {ledger.id} is damaged (seg-000000003.json is missing), so "
        "it cannot be resumed: launch the keys that have no successful run yet with: dbxdec "
        "catchup nightly --start KEY --end KEY"
    )


def test_the_journal_folder_is_validated_before_it_reaches_a_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DBXDEC_JOURNAL_DIR", "/Shared/team/backfills/")
    assert journal_folder(7, "nightly-20240101T000000-ab12") == (
        "/Shared/team/backfills/job-7/nightly-20240101T000000-ab12"
    )
    for root in ("Shared/x", "/Shared/../Users/x"):
        with pytest.raises(UsageError, match="is not an absolute workspace folder: set it"):
            journal_folder(7, "nightly-1", root=root)
    for bad_id in ("../x", "a/b", ""):
        with pytest.raises(UsageError, match="is not a backfill id"):
            journal_folder(7, bad_id)


def test_a_follower_reads_only_the_segments_added_since_its_last_read(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(
        client, new_ledger(tmp_path, 4), job_id=JOB_ID, writer="cli:test", snapshot_every=10
    )
    for n in range(14):  # segments 2..15, a snapshot at 10
        tick(ledger, n)
        ledger.save()
    follower = JournalFollower(client, JOB_ID, ledger.id)
    emu.requests.clear()
    assert follower.read().to_json() == ledger.to_json()
    assert emu.requests["/api/2.0/workspace/export"] == 1 + 5  # snap-10, seg-11..15
    for n in range(14, 17):
        tick(ledger, n)
        ledger.save()
    emu.requests.clear()

    assert follower.read().to_json() == ledger.to_json()

    assert emu.requests["/api/2.0/workspace/list"] == 1
    assert emu.requests["/api/2.0/workspace/export"] == 3 and follower.seq == 18


def test_a_journal_in_a_local_folder_is_written_read_and_fenced_as_in_the_workspace(
    tmp_path: Path,
) -> None:
    ledger = new_ledger(tmp_path, 3)
    place = LocalPlace(tmp_path / "journals" / ledger.id)
    place.make()
    ledger.bind(JournalStore(place, writer="cli:test", next_seq=1, part_bytes=400))
    ledger.save()

    def opened(writer: str) -> Ledger:
        state, _ = read_state(place, ledger.id)
        store = JournalStore(
            place, writer=writer, next_seq=state.seq + 1, snapshot_every=2, base=state
        )
        return Ledger.from_json(store.path, state.to_json(), store=store)

    first, second = opened("controller:1:0"), opened("controller:2:0")
    tick(first, 0)
    first.save()  # segment 2, then its snapshot
    before = {name: place.read(name) for name in place.names()}
    tick(second, 1)
    with pytest.raises(JournalLost, match="segment 2 was written by controller:1:0"):
        second.save()
    assert {name: place.read(name) for name in place.names()} == before
    assert "snap-000000002.json" in before and any(".p001." in name for name in before)
    tick(first, 2)
    first.save()
    state, _ = read_state(place, ledger.id)
    assert Ledger.from_json(tmp_path, state.to_json()).to_json() == first.to_json()
    assert append_to(place, "pause", by="ann@example.com").seq == 1
    assert current_control(read_controls(place)) == "paused"
