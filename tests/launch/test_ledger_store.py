"""The ledger database: a save writes only what changed, whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.errors import LocalStateProblem
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    LedgerStore,
    SliceRecord,
    ledger_dir,
    list_ledgers,
    load_ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

PAGE = 4096 + 24  # one WAL frame: a page and its header


def make(root: Path, n: int) -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"k{i:06d}",)) for i in range(n)))
    return Ledger.create(root, plan, backend=BackendSpec("databricks", 7), options=LaunchOptions())


def wal_growth_of_one_change(root: Path, n: int) -> int:
    ledger = make(root, n)
    ledger.save()
    wal = ledger.path.with_name(ledger.path.name + "-wal")
    before = wal.stat().st_size
    record = ledger.slices[n // 2]
    ledger.update(record.with_attempt(Attempt(1, "t", "running", "1", None, 1.0)))
    ledger.save()
    growth = wal.stat().st_size - before
    ledger.close()
    return growth


def test_recording_one_change_writes_as_much_at_a_thousand_as_at_ten_thousand_slices(
    tmp_path: Path,
) -> None:
    small = wal_growth_of_one_change(tmp_path / "small", 1_000)
    large = wal_growth_of_one_change(tmp_path / "large", 10_000)  # both below a checkpoint
    assert 0 < small <= 8 * PAGE and large <= small  # the header's page, the slice's pages


def test_a_reader_sees_the_last_commit_whole_when_a_save_fails_midway(tmp_path: Path) -> None:
    ledger = make(tmp_path, 4)
    ledger.save()
    store = LedgerStore(ledger.path)

    def changes() -> Iterator[tuple[int, dict[str, Any]]]:
        yield 0, {"index": 0, "keys": ["k000000"], "parameters": {}, "attempts": []}
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        store.write({**ledger.to_json(), "state": "failed"}, changes(), 4)
    store.write({**ledger.to_json(), "state": "succeeded"}, [], 4)  # usable after
    store.close()
    seen = read_ledger(ledger.path)
    assert seen.state == "succeeded" and seen.slices[0].keys == ("k000000",)


def test_a_rebatch_that_shrinks_the_tail_drops_the_rows_past_it(tmp_path: Path) -> None:
    ledger = make(tmp_path, 5)
    ledger.save()
    merged = SliceRecord(3, ("k000003", "k000004"), {"backfill_key": "k000004"})
    ledger.slices = [*ledger.slices[:3], merged]
    ledger.save()
    assert [r.keys for r in read_ledger(ledger.path).slices][3:] == [("k000003", "k000004")]


def test_a_launcher_s_later_save_keeps_the_versions_an_undo_recorded(tmp_path: Path) -> None:
    """``undo`` records what it restored through its own ``Ledger`` of the file while the
    backfill's launcher may still run: the launcher's next save, from the header it read
    before, keeps them (undone versions only ever grow)."""
    launcher = make(tmp_path, 3)
    launcher.save()
    undo = read_ledger(launcher.path)
    undo.record_undone("main.s.t", 7)
    undo.close()
    launcher.update(launcher.slices[0].with_attempt(Attempt(1, "t", "running", "1", None, 1.0)))
    launcher.record_undone("main.s.u", 2)  # its own, besides
    launcher.save()
    launcher.close()
    assert read_ledger(launcher.path).undone == {("main.s.t", 7), ("main.s.u", 2)}


def test_a_damaged_database_is_a_local_state_problem_naming_it(tmp_path: Path) -> None:
    path = ledger_dir(tmp_path) / "nightly-20240101T000000-abcd.sqlite"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(LocalStateProblem, match=r"is damaged \(DatabaseError: "):
        load_ledger(tmp_path, path.stem)
    assert list_ledgers(tmp_path) == []


def test_a_ledger_from_before_downstream_loads_as_one_job_s(tmp_path: Path) -> None:
    """Slices written without ``job`` and ``waits_for`` (every ledger before
    ``--downstream``) are the ledger's job's, waiting for nothing, wherever a slice's job
    is asked: blocking, routing a run, polling it, undoing it."""
    from databricks_bundle_decorators.launch.backends.job_router import JobRouter, PerJobBackend
    from databricks_bundle_decorators.launch.operations.undo import (
        downstream_jobs,
        job_runs,
    )
    from databricks_bundle_decorators.launch.run.blocking import is_downstream, ledger_jobs

    ledger = make(tmp_path, 2)
    ledger.update(ledger.slices[0].with_attempt(Attempt(1, "t", "succeeded", "41", None, 1.0)))
    ledger.save()
    ledger.close()
    written = ledger.to_json()["slices"]
    assert all("job" not in s and "waits_for" not in s for s in written)  # the one-job shape

    old = load_ledger(tmp_path, ledger.id)
    assert [(r.job, r.waits_for) for r in old.slices] == [(None, ()), (None, ())]
    assert not is_downstream(old) and ledger_jobs(old) == downstream_jobs(old) == ["nightly"]
    assert JobRouter(None, old).job_of("t") is None  # type: ignore[arg-type]  # its own job
    assert PerJobBackend({}, old)._job_of("41") == "nightly"
    assert job_runs(old, "nightly").run_ids == frozenset({"41"})


def test_job_ids_are_stored_for_a_downstream_backfill(tmp_path: Path) -> None:
    """A downstream header keeps each job's id; one-job and downstream headers round-trip."""
    one = Ledger(
        tmp_path / "a.sqlite", backfill_id="a-1", job="a",
        backend=BackendSpec("databricks", job_id=7), options=LaunchOptions(), slices=[],
    )  # fmt: skip
    assert Ledger.from_json(one.path, one.to_json()).backend == one.backend
    spec = BackendSpec("databricks", job_id=7, job_ids={"a": 7, "b": 8})
    many = Ledger(
        tmp_path / "b.sqlite", backfill_id="a-2", job="a",
        backend=spec, options=LaunchOptions(), slices=[],
    )  # fmt: skip
    assert many.to_json()["backend"]["job_ids"] == {"a": 7, "b": 8}
    assert Ledger.from_json(many.path, many.to_json()).backend == spec
