"""A backfill's commits found by its id in ``userMetadata`` (no Spark: histories written
out; tests/launch/test_undo.py reads real ones)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.wire import (
    TaskOrder,
    UndoOrder,
    decode_order,
    encode_order,
    task_order,
    with_order,
)
from databricks_bundle_decorators.runtime.programs.undo import BackfillRuns, plan_table
from databricks_bundle_decorators.runtime.storage.delta_history import Commit
from databricks_bundle_decorators.runtime.storage.formats import TableRef
from databricks_bundle_decorators.runtime.storage.table_name import (
    commit_identity,
    commit_metadata,
    split_metadata,
)

BID = "sales-20240601T120000-1a2b"
LATER = "sales-20240602T080000-9f9f"
RUNS = BackfillRuns(BID, "sales", frozenset({"5501"}), by_id=True)
TABLE = TableRef("main.s.t", "`main`.`s`.`t`")


def ours(run: str, task: str = "clean") -> str:
    return commit_metadata(commit_identity("sales", task, run), BID)


@pytest.mark.parametrize(
    ("metadata", "mine"),
    [
        pytest.param(ours("5501-0"), True, id="a-run-the-ledger-names"),
        pytest.param(ours("7777-2", "totals"), True, id="any-run-of-the-backfill"),
        pytest.param(
            commit_identity("sales", "clean", f"refresh={BID}:7777-0"), True, id="refresh-swap"
        ),
        pytest.param(
            commit_metadata(commit_identity("sales", "clean", "5501-0"), LATER),
            False,
            id="another-backfill-of-the-job",
        ),
        pytest.param(commit_identity("sales", "clean", "5501-0"), False, id="a-run-of-no-backfill"),
        pytest.param(
            commit_identity("sales", "clean", f"refresh={LATER}:7777-0"),
            False,
            id="another-refresh",
        ),
        pytest.param(
            commit_metadata(commit_identity("orders", "clean", "1-0"), BID), False, id="other-job"
        ),
        pytest.param(f"backfill={BID}", False, id="not-dbxdec"),
        pytest.param(None, False, id="no-metadata"),
    ],
)
def test_a_commit_is_the_backfill_s_when_its_metadata_names_the_backfill(
    metadata: str | None, mine: bool
) -> None:
    assert RUNS.wrote(metadata) is mine


def history(*metadata: str | None) -> list[Commit]:
    return [Commit(v, "WRITE", m, "2024-06-01 12:00:00Z") for v, m in enumerate(metadata)]


def test_a_later_backfill_of_the_same_job_is_another_writer() -> None:
    later = commit_metadata(commit_identity("sales", "clean", "9000-0"), LATER)
    undo = plan_table(TABLE, ("clean",), history(None, ours("1-0"), ours("2-0"), later), RUNS)
    assert (undo.action, undo.to_version) == ("restore", 0)
    assert [c.version for c in undo.ours] == [1, 2]
    assert [c.version for c in undo.others] == [3]
    refusal = undo.refusal()
    assert refusal is not None and refusal.startswith("table main.s.t: version 3 (WRITE at ")
    assert f"by {later!r}) was committed by another writer" in refusal


def test_the_order_by_id_is_read_back_with_no_runs() -> None:
    order = UndoOrder(BID, (), True, (("main.s.t", 7),))
    assert decode_order(encode_order(order)) == order
    assert order.by_backfill_id and not UndoOrder(BID, ("1",)).by_backfill_id


_IDS = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,40}", fullmatch=True)
_RUNS = st.from_regex(r"[0-9]{1,16}-[0-9]{1,3}|local-[a-z0-9]{1,12}", fullmatch=True)
_TASKS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@given(bid=_IDS, other=_IDS, run=_RUNS, task=_TASKS)
def test_metadata_names_exactly_its_backfill(bid: str, other: str, run: str, task: str) -> None:
    identity = commit_identity("sales", task, run)
    metadata = commit_metadata(identity, bid)
    assert split_metadata(metadata) == (identity, bid)
    assert task_order(with_order({}, TaskOrder(bid))).backfill_id == bid
    assert BackfillRuns(bid, "sales", frozenset(), by_id=True).wrote(metadata)
    assert BackfillRuns(other, "sales", frozenset(), by_id=True).wrote(metadata) is (other == bid)
    # a ledger older than the id finds the same commit by its run
    assert BackfillRuns(bid, "sales", frozenset({run})).wrote(metadata)


@pytest.mark.parametrize("value", ["a b", "x;force=true", "{{job.id}}", "-leading"])
def test_a_backfill_id_parameter_that_is_no_id_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"job parameter dbxdec_order=.* is not an order"):
        encode_order(TaskOrder(value))
