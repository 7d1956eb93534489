"""The one order parameter, ``dbxdec_order``: every kind round-trips, bad input is refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.wire import (
    ORDER_KINDS,
    KeyRange,
    MeasureOrder,
    Order,
    PresenceOrder,
    StageOrder,
    SwapOrder,
    TaskOrder,
    UndoOrder,
    decode_order,
    encode_order,
    keyless_run,
    order_in,
    task_order,
    with_order,
)

IDS = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,20}", fullmatch=True)
RUNS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,20}", fullmatch=True)
TASKS = st.from_regex(r"[A-Za-z0-9_\-]{1,20}", fullmatch=True)
KEYS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,20}", fullmatch=True)
TABLES = st.from_regex(r"[A-Za-z0-9_.]{1,30}", fullmatch=True)
RANGES = st.builds(KeyRange, KEYS, KEYS)


def _task_kind(
    cls: type[TaskOrder], backfill_ids: st.SearchStrategy[str]
) -> st.SearchStrategy[Order]:
    return st.builds(
        cls,
        backfill_ids,
        st.tuples() | st.lists(TASKS, max_size=3).map(tuple),
        st.booleans(),
        st.booleans(),
        st.lists(KEYS, max_size=3).map(tuple),
    )


STRATEGIES: dict[str, st.SearchStrategy[Order]] = {
    "task": _task_kind(TaskOrder, st.just("") | IDS),
    "stage": _task_kind(StageOrder, IDS),
    "swap": _task_kind(SwapOrder, IDS),
    "undo": st.builds(
        UndoOrder,
        IDS,
        st.lists(IDS, max_size=3).map(tuple),
        st.booleans(),
        st.lists(st.tuples(TABLES, st.integers(0, 10**18 - 1)), max_size=3).map(tuple),
    ),
    "presence": st.builds(PresenceOrder, RANGES),
    "measure": st.builds(MeasureOrder, RUNS, st.just("") | IDS, RANGES),
}


def test_every_kind_has_a_strategy() -> None:
    assert tuple(STRATEGIES) == ORDER_KINDS


@pytest.mark.parametrize("kind", ORDER_KINDS)
@given(data=st.data())
def test_every_order_round_trips(kind: str, data: st.DataObject) -> None:
    order = data.draw(STRATEGIES[kind])
    text = encode_order(order)
    assert "{{" not in text and "}}" not in text  # Databricks would read a reference
    assert decode_order(text) == order
    assert type(decode_order(text)) is type(order)


def test_an_empty_order_is_an_ordinary_run() -> None:
    assert decode_order("") is None
    assert decode_order("  ") is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("stage:sales-1", "not JSON"),
        ("[]", "kind is one of"),
        ('{"kind": "rerun"}', "kind is one of"),
        ('{"kind": "task", "tasks": "clean"}', "is not a list"),
        ('{"kind": "task", "checks": "off"}', "is not true or false"),
        ('{"kind": "task", "force_rewrite": "yes please"}', "is not true or false"),
        ('{"kind": "task", "tasks": ["clean,load"]}', "does not match"),
        ('{"kind": "task", "keys": ["2024-01-01; DROP"]}', "does not match"),
        ('{"kind": "task", "only": []}', "no field 'only'"),
        ('{"kind": "task", "backfill_id": "../etc"}', "does not match"),
        ('{"kind": "stage"}', "lacks 'backfill_id'"),
        ('{"kind": "swap", "backfill_id": ""}', "does not match"),
        ('{"kind": "undo", "force": true}', "lacks 'backfill_id'"),
        ('{"kind": "undo", "backfill_id": "b", "undone": [["t;DROP", 1]]}', "not [TABLE"),
        ('{"kind": "undo", "backfill_id": "b", "undone": [["t", -1]]}', "not [TABLE"),
        ('{"kind": "undo", "backfill_id": "b", "undone": [["t", true]]}', "not [TABLE"),
        ('{"kind": "presence", "first": "2024-01-01"}', "lacks 'last'"),
        ('{"kind": "presence", "first": "a b", "last": "c"}', "does not match"),
        (
            '{"kind": "measure", "run_id": "-1", "backfill_id": "", "first": "a", "last": "b"}',
            "does not match",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_parameter(value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)) as caught:
        decode_order(value)
    assert str(caught.value).startswith("job parameter dbxdec_order=")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "order",
    [
        StageOrder(),
        TaskOrder("a", keys=("2024-01-01", "{{job.id}}")),
        PresenceOrder(KeyRange("2024 01", "2024-01-02")),
        UndoOrder("b", undone=(("t", 10**18),)),
    ],
)
def test_a_value_that_cannot_be_sent_is_refused_when_encoding(order: Order) -> None:
    with pytest.raises(ValueError, match="dbxdec_order"):
        encode_order(order)


@pytest.mark.parametrize("kind", ["task", "stage", "swap"])
@given(data=st.data())
def test_a_task_order_travels_in_the_job_parameters(kind: str, data: st.DataObject) -> None:
    order = data.draw(STRATEGIES[kind])
    assert isinstance(order, TaskOrder)
    params = with_order({"backfill_key": "2024-01-01"}, order)
    assert params["backfill_key"] == "2024-01-01"
    assert task_order(params) == order_in(params) == order
    assert keyless_run(params) is (kind == "swap")


def test_task_order_reads_none_as_an_ordinary_run_and_refuses_other_kinds() -> None:
    assert task_order({}) == task_order({"dbxdec_order": ""}) == TaskOrder()
    with pytest.raises(ValueError, match="dbxdec_order holds a PresenceOrder"):
        task_order(with_order({}, PresenceOrder(KeyRange("a", "b"))))
    assert order_in({"dbxdec_order": "stage:sales-1"}) is None  # looked at, not run
