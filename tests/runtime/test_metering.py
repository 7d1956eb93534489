"""Metering: metrics observed while the output is written agree with the grouped pass,
and the observed totals decide a run only when they determine every key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.definitions.contracts import ROWS_LOWER_BOUND_METRIC
from databricks_bundle_decorators.runtime.checks.checking import slice_failures
from databricks_bundle_decorators.runtime.checks.metering import Metering
from databricks_bundle_decorators.runtime.checks.shipped import (
    ROWS_METRIC,
    Check,
    Expect,
    MaxNullFraction,
    MinRowCount,
    Unique,
)
from databricks_bundle_decorators.runtime.core.errors import CheckFailed

pytestmark = pytest.mark.spark

KEYS = ("2024-01-01", "2024-01-02", "2024-01-03")
CHECKS: tuple[Check, ...] = (
    MinRowCount(2),
    MaxNullFraction("customer", 0.0),
    Unique("id"),
    Expect("amount > 0"),
)
Row = tuple[str | None, str, int | None, int]


def frame_of(spark: Any, rows: list[Row]) -> Any:
    return spark.createDataFrame(rows, "day string, id string, customer bigint, amount bigint")


def observed(spark: Any, metering: Metering, rows: list[Row], keys: tuple[str, ...]) -> Any:
    """The pending metrics after an action on the observed frame, and the written rows."""
    frame = frame_of(spark, rows)
    pending = metering.observe(frame, keys)
    assert pending is not None
    written = pending.frame.collect()
    return pending, written, frame


def test_one_key_observed_equals_grouped_pass(spark: Any) -> None:
    rows: list[Row] = [
        ("2024-01-01", "a", 1, 5),
        ("2024-01-01", "a", None, 5),  # a duplicate id and a null customer
        ("2024-01-01", "b", 2, -1),  # fails amount > 0
        ("2024-01-01", "c", 3, None),  # null amount fails too
    ]
    metering = Metering(CHECKS, "day")
    pending, written, frame = observed(spark, metering, rows, ("2024-01-01",))
    resolved = pending.resolve(lambda: frame)
    assert resolved == metering.measure(frame)
    assert resolved == {
        "2024-01-01": {ROWS_METRIC: 4, "c1_nulls": 1, "c2_duplicates": 1, "c3_failing": 2}
    }
    # the observed frame writes exactly the output's rows and columns
    assert sorted(map(repr, map(tuple, written))) == sorted(map(repr, rows))
    assert pending.frame.columns == frame.columns


def test_unique_counts_duplicates_within_each_key_only(spark: Any) -> None:
    rows: list[Row] = [
        ("2024-01-01", "a", 1, 1),
        ("2024-01-02", "a", 1, 1),  # same id, another key: not a duplicate
        ("2024-01-02", "b", 1, 1),
        ("2024-01-02", "b", 1, 1),
        ("2024-01-02", "b", 1, 1),
    ]
    measured = Metering((Unique("id"),), "day").measure(frame_of(spark, rows))
    assert measured == {
        "2024-01-01": {ROWS_METRIC: 1, "c0_duplicates": 0},
        "2024-01-02": {ROWS_METRIC: 4, "c0_duplicates": 2},
    }


def test_several_keys_all_zero_resolve_to_row_counts(spark: Any) -> None:
    rows: list[Row] = [("2024-01-01", "a", 1, 1), ("2024-01-01", "b", 1, 1)]
    rows += [("2024-01-03", "c", 1, 1)]
    metering = Metering(CHECKS, "day")
    pending, _, frame = observed(spark, metering, rows, KEYS)
    resolved = pending.resolve(lambda: frame)
    assert resolved == metering.measure(frame)
    zeros = {"c1_nulls": 0, "c2_duplicates": 0, "c3_failing": 0}
    assert resolved == {
        "2024-01-01": {ROWS_METRIC: 2, **zeros},
        "2024-01-03": {ROWS_METRIC: 1, **zeros},
    }
    failures = slice_failures(resolved, CHECKS, keys=list(KEYS))
    assert [(f.key, f.detail) for f in failures] == [
        ("2024-01-02", "0 rows, expected at least 2"),
        ("2024-01-03", "1 row, expected at least 2"),
    ]


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param([("2024-01-01", "a", None, 1), ("2024-01-02", "b", 1, 1)], id="a-null"),
        pytest.param([("2024-01-05", "a", 1, 1)], id="a-key-outside-the-run"),
        pytest.param([(None, "a", 1, 1)], id="a-null-key"),
    ],
)
def test_totals_that_do_not_decide_each_key_ask_for_the_grouped_pass(
    spark: Any, rows: list[Row]
) -> None:
    pending, _, frame = observed(spark, Metering(CHECKS, "day"), rows, KEYS)
    assert pending.resolve(lambda: frame) is None


def test_a_tolerant_check_is_judged_per_key_by_the_grouped_pass(spark: Any) -> None:
    rows: list[Row] = [("2024-01-01", str(n), None if n == 0 else 1, 1) for n in range(4)]
    rows += [("2024-01-02", str(n), 1, 1) for n in range(4)]
    loose, strict = MaxNullFraction("customer", 0.3), MaxNullFraction("customer", 0.2)
    measured = Metering((loose, strict), "day").measure(frame_of(spark, rows))
    assert slice_failures(measured, [loose], keys=list(KEYS[:2])) == []
    failures = slice_failures(measured, [strict], keys=list(KEYS[:2]))
    assert [(f.key, f.detail) for f in failures] == [
        ("2024-01-01", "1 of 4 rows (25.0%) have customer null")
    ]


def test_unpartitioned_output_is_one_slice(spark: Any) -> None:
    rows: list[Row] = [("x", "a", 1, 1), ("y", "a", 1, -1)]
    metering = Metering(CHECKS, None)
    frame = frame_of(spark, rows)
    pending = metering.observe(frame, None)
    assert pending is not None
    pending.frame.collect()
    expected = {None: {ROWS_METRIC: 2, "c1_nulls": 0, "c2_duplicates": 1, "c3_failing": 1}}
    assert pending.resolve(lambda: frame) == expected == metering.measure(frame)


class _MaxAmount(Check):
    """A check with its own aggregate: it cannot be observed, only measured."""

    @property
    def name(self) -> str:
        return "max_amount(10)"

    def metrics(self, prefix: str) -> dict[str, Any]:
        from pyspark.sql import functions as F

        return {f"{prefix}max": F.max("amount")}

    def failure(self, values: Any, prefix: str) -> str | None:
        top = values.get(f"{prefix}max")
        return f"max amount {top}" if top is not None and top > 10 else None


def test_checks_with_their_own_aggregates_are_measured(spark: Any) -> None:
    metering = Metering((_MaxAmount(),), "day")
    assert not metering.countable
    assert metering.observe(frame_of(spark, [("2024-01-01", "a", 1, 1)]), KEYS) is None
    measured = metering.measure(frame_of(spark, [("2024-01-01", "a", 1, 11)]))
    assert measured == {"2024-01-01": {ROWS_METRIC: 1, "c0_max": 11}}


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from([*KEYS, "2024-01-09"]),
        st.sampled_from(["a", "b", "c"]),
        st.none() | st.integers(0, 2),
        st.integers(-1, 2),
    ),
    max_size=8,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, width=st.integers(1, 3))
def test_observed_metrics_agree_with_the_grouped_pass(
    spark: Any, rows: list[Row], width: int
) -> None:
    keys = KEYS[:width]
    metering = Metering(CHECKS, "day")
    pending, _, frame = observed(spark, metering, rows, keys)
    resolved = pending.resolve(lambda: frame)
    measured = metering.measure(frame)
    if resolved is not None:
        assert resolved == measured
    else:  # only when the totals cannot decide every key
        stray = any(day not in keys for day, *_ in rows)
        counters = any(v for m in measured.values() for n, v in m.items() if n != ROWS_METRIC)
        assert stray or (width > 1 and counters)


def test_row_floors_say_when_presence_decides() -> None:
    assert MinRowCount(3).row_floor == 3
    assert [c.row_floor for c in CHECKS[1:]] == [0, 0, 0]
    assert _MaxAmount().row_floor is None
    assert Metering((MinRowCount(1), Unique("id")), "day").presence_decides
    assert not Metering((MinRowCount(2),), "day").presence_decides
    assert not Metering((_MaxAmount(),), "day").presence_decides


def _unread() -> Any:
    raise AssertionError("the staged rows were read")


def test_present_keys_decide_when_no_check_needs_exact_counts(spark: Any) -> None:
    rows: list[Row] = [("2024-01-01", "a", 1, 1), ("2024-01-01", "b", 1, 1)]
    checks = (MinRowCount(1), Unique("id"))
    pending, _, _ = observed(spark, Metering(checks, "day"), rows, KEYS)
    resolved = pending.resolve(_unread, lambda: frozenset({"2024-01-01"}))
    # the row count is a lower bound there, and says so (check results report no count)
    assert resolved == {
        "2024-01-01": {ROWS_METRIC: 1, ROWS_LOWER_BOUND_METRIC: 1, "c1_duplicates": 0}
    }
    failures = slice_failures(resolved, checks, keys=list(KEYS))
    assert [(f.key, f.detail) for f in failures] == [
        ("2024-01-02", "0 rows, expected at least 1"),
        ("2024-01-03", "0 rows, expected at least 1"),
    ]
    # a floor above 1 needs the exact counts: the staged rows are counted
    exact = Metering((MinRowCount(2),), "day")
    pending, _, frame = observed(spark, exact, rows, KEYS)
    assert pending.resolve(lambda: frame, lambda: frozenset({"2024-01-01"})) == {
        "2024-01-01": {ROWS_METRIC: 2}
    }


def test_ranged_write_clears_keys_without_rows(spark: Any, warehouse: Path) -> None:
    from databricks_bundle_decorators import DailyBackfill
    from databricks_bundle_decorators.runtime import (
        KeyScope,
        OutputContext,
        RunEnvironment,
        SparkTableIoManager,
    )

    from .pipelines import events_for, partition_values, read_local

    io = SparkTableIoManager("main.test.ranged", partition_column="day", time_column="ts")
    backfill = DailyBackfill("2024-01-01")
    environment = RunEnvironment(spark, warehouse)
    both = KeyScope(backfill, ("2024-08-01", "2024-08-02"))
    io.handle_output(OutputContext("j", "t", both, environment), events_for(list(both.keys)))
    table = "main.test.ranged"
    assert partition_values(spark, warehouse, table, "day") == ["2024-08-01", "2024-08-02"]
    checked = OutputContext("j", "t", both, environment, (MinRowCount(1),))
    with pytest.raises(CheckFailed, match="min_row_count\\(1\\) failed for key 2024-08-02: 0 rows"):
        io.handle_output(checked, events_for(["2024-08-01"], per_day=1))
    assert read_local(spark, warehouse, table).count() == 6  # nothing was written
    io.handle_output(OutputContext("j", "t", both, environment), events_for(["2024-08-01"]))
    assert partition_values(spark, warehouse, table, "day") == ["2024-08-01"]
    assert read_local(spark, warehouse, table).count() == 3
