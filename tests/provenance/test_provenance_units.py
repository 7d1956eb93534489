"""Provenance without Spark: the record's codec (a Hypothesis round trip, and damaged
text read as no record), the code fingerprint (what changes it and what does not), the
index built from a Delta log written here as the protocol lays it out, and the overlap
queries ``stale`` answers with."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill, HourlyBackfill
from databricks_bundle_decorators.backfill.wire.provenance import (
    Provenance,
    split_provenance,
    with_provenance,
)
from databricks_bundle_decorators.definitions.fingerprint import normalised, task_fingerprint
from databricks_bundle_decorators.launch.ledger.place import LocalPlace
from databricks_bundle_decorators.launch.provenance.index import TableIndex, read_index
from databricks_bundle_decorators.launch.provenance.stale import Placed, StaleKeys
from databricks_bundle_decorators.runtime.storage.table_name import split_metadata

_text = st.text(min_size=0, max_size=20)
_name = st.text(min_size=1, max_size=20)
records = st.builds(
    Provenance,
    job=_name,
    task=_name,
    run_id=_text,
    code=_text,
    dbxdec=_text,
    reads=st.dictionaries(_name, st.integers(min_value=0, max_value=2**40), max_size=4),
    keys=st.lists(_name, max_size=5).map(tuple),
    column=st.one_of(st.none(), _name),
    checks=st.lists(_name, max_size=3).map(tuple),
    warned=st.lists(_name, max_size=3).map(tuple),
    backfill_id=_text,
)


@given(records, st.sampled_from(["dbxdec:j:t:1", "dbxdec:j:t:1:backfill=j-20240101T000000-ab"]))
def test_a_record_survives_the_commit_metadata_and_leaves_its_identity_alone(
    record: Provenance, identity: str
) -> None:
    text = with_provenance(identity, record)
    assert split_provenance(text) == (identity, record)
    # undo and the key-change reports read the identity part as before
    assert split_metadata(text) == split_metadata(identity)


@pytest.mark.parametrize(
    "tail",
    ["{not json", '{"f": 2, "job": "j"}', '{"f": 1, "job": 3}', "[]", '{"f":1,"reads":{"t":-1}}'],
)
def test_a_damaged_or_foreign_record_reads_as_none(tail: str) -> None:
    assert split_provenance(f"dbxdec:j:t:1 dbxdec-provenance={tail}") == ("dbxdec:j:t:1", None)


PROJECT = """
from fp_helpers import scale


def helper(x):
    return x + 1


def task_b(rows):
    # the task
    return [scale(helper(r)) for r in rows]


def task_c(rows):
    return rows
"""
HELPERS = "def scale(x):\n    return x * 2\n"


def _load(root: Path, project: str, helpers: str) -> object:
    (root / "fp_project.py").write_text(project)
    (root / "fp_helpers.py").write_text(helpers)
    shutil.rmtree(root / "__pycache__", ignore_errors=True)
    for name in ("fp_project", "fp_helpers"):
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module("fp_project")


def test_the_fingerprint_follows_the_task_its_helpers_and_project_modules_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))

    def prints(project: str = PROJECT, helpers: str = HELPERS) -> tuple[str, str]:
        module = _load(tmp_path, project, helpers)
        return task_fingerprint(module.task_b), task_fingerprint(module.task_c)  # type: ignore[attr-defined]

    try:
        b, c = prints()
        assert len(b) == 16 and b != c
        assert prints() == (b, c)  # the same code: the same fingerprint
        # blank lines, whole-line comments, trailing spaces: no change
        assert prints(PROJECT.replace("    # the task\n", "\n\n").replace("rows]", "rows]   ")) == (
            b,
            c,
        )
        # the task's own code, a helper it calls, a project function it imports: B only
        for edited in (
            PROJECT.replace("for r in rows", "for r in rows if r"),
            PROJECT.replace("x + 1", "x + 2"),
        ):
            assert prints(edited)[0] != b and prints(edited)[1] == c
        # a project module it imports (a top-level module beside it, as in a checkout)
        edited_helper = prints(helpers=HELPERS.replace("* 2", "* 3"))
        assert edited_helper[0] != b and edited_helper[1] == c
    finally:
        for name in ("fp_project", "fp_helpers"):
            sys.modules.pop(name, None)


def test_normalised_drops_what_does_not_change_behaviour() -> None:
    assert normalised("  def f():\n\n      # c\n      return 1   \n") == "def f():\n    return 1"


def _commit(
    log: Path, version: int, metadata: str | None, column: str, values: list[str], op: str = "WRITE"
) -> None:
    info = {"timestamp": 1_700_000_000_000, "operation": op}
    if metadata is not None:
        info["userMetadata"] = metadata
    lines = [json.dumps({"commitInfo": info})]
    lines += [
        json.dumps({"add": {"path": f"{column}={v}/p.parquet", "partitionValues": {column: v},
                            "stats": json.dumps({"numRecords": 1, "minValues": {"ts": f"{v}T01:00:00Z"},
                                                 "maxValues": {"ts": f"{v}T02:00:00Z"}})}})
        for v in values
    ]  # fmt: skip
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def _record(keys: list[str], run: str, reads: dict[str, int] | None = None) -> str:
    record = Provenance("j", "t", run, code="c" * 16, dbxdec="0.1.0", reads=reads or {},
                        keys=tuple(keys), column="day")  # fmt: skip
    return with_provenance(f"dbxdec:j:t:{run}", record)


def test_the_index_follows_the_history_and_is_rebuilt_the_same(tmp_path: Path) -> None:
    table = tmp_path / "t"
    log = table / "_delta_log"
    place = LocalPlace(tmp_path / "index")
    _commit(
        log, 0, _record(["2024-01-01", "2024-01-02"], "r0"), "day", ["2024-01-01", "2024-01-02"]
    )
    _commit(log, 1, _record(["2024-01-02"], "r1"), "day", ["2024-01-02"])
    _commit(log, 2, None, "day", ["2024-01-01"], op="MERGE")  # another writer: no record
    _commit(log, 3, "", "day", [], op="OPTIMIZE")  # maintenance: no change of rows
    index = read_index(place, "main.s.t", table)
    assert index.version == 3
    assert index.record("2024-01-02") is not None and index.record("2024-01-02").run_id == "r1"  # type: ignore[union-attr]
    assert index.record("2024-01-01") is None and index.foreign["2024-01-01"] == (2, "MERGE")
    assert [c.version for c in index.changes_after(0)] == [1, 2]
    assert len(index.records) == 1  # r0's record no longer names a key: dropped
    # saved, and read back the same; damaged or deleted: rebuilt the same from the log
    saved = TableIndex.from_text("main.s.t", place.read("main.s.t.json"))
    assert saved is not None and saved.to_text() == index.to_text()
    place.write("main.s.t.json", "{damaged")
    assert read_index(place, "main.s.t", table).to_text() == index.to_text()
    # behind: only the newer commits are read
    _commit(log, 4, _record(["2024-01-01"], "r4"), "day", ["2024-01-01"])
    later = read_index(place, "main.s.t", table)
    assert later.version == 4 and later.record("2024-01-01").run_id == "r4"  # type: ignore[union-attr]
    assert later.changes[-1].ranges["ts"] == ("2024-01-01T01:00:00Z", "2024-01-01T02:00:00Z")


@given(
    st.lists(st.tuples(st.integers(0, 500), st.integers(1, 50)), max_size=30),
    st.lists(st.tuples(st.integers(-50, 550), st.integers(1, 80)), min_size=1, max_size=5),
)
def test_placed_finds_exactly_the_overlapping_intervals(
    items: list[tuple[int, int]], spans: list[tuple[int, int]]
) -> None:
    placed = Placed.of(((float(s), float(s + n)), i) for i, (s, n) in enumerate(items))
    windows = [(float(s), float(s + n)) for s, n in spans]
    expected = {i for i, (s, n) in enumerate(items) for a, b in windows if s < b and a < s + n}
    assert set(placed.meeting(windows)) == expected


@given(st.sets(st.integers(0, 24 * 60), max_size=40), st.integers(0, 24 * 60), st.integers(1, 72))
def test_stale_keys_meet_the_spans_their_windows_overlap(
    hours: set[int], start: int, length: int
) -> None:
    backfill = HourlyBackfill("2024-01-01T00")
    keys = [backfill.shift_key("2024-01-01T00", h) for h in hours]
    stale = StaleKeys.of(backfill, keys)
    origin = backfill.window("2024-01-01T00").start_utc().timestamp()
    span = (origin + start * 3600.0 - 1800.0, origin + (start + length) * 3600.0)
    expected = sorted(
        k for k in keys
        if backfill.window(k).start_utc().timestamp() < span[1]
        and span[0] < backfill.window(k).end_utc().timestamp()
    )  # fmt: skip
    assert stale.meeting([span]) == expected
    daily = StaleKeys.of(DailyBackfill("2024-01-01"), ["2024-01-03"])
    assert daily.meeting([(float("-inf"), 0.0)]) == ["2024-01-03"]  # unplaced: every key
