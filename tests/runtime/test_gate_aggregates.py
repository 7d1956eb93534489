"""Aggregates a table declares for the diff gate (``gate=[...]``), without Spark: what is
refused at definition, how a measure's move is judged (0 and null baselines included),
and how measures cross the wire from the measurement run to the launcher."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.wire import (
    KeyChange,
    KeyRange,
    MeasureOrder,
    MeasureReport,
    decode_order,
    encode_order,
)
from databricks_bundle_decorators.checks import CountDistinct, Mean, MinRowCount, Sum
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.launch.backends.diff_gate import gate_verdict
from databricks_bundle_decorators.runtime.job_tables.key_changes import change_versions
from databricks_bundle_decorators.runtime.storage.delta_history import Commit


def io(**options: object) -> SparkTableIoManager:
    return SparkTableIoManager("main.s.t", **options)  # type: ignore[arg-type]


def test_declared_aggregates_are_kept_in_order_with_their_names() -> None:
    manager = io(partition_column="day", gate=[Sum("amount"), CountDistinct("customer_id")])
    assert [a.name for a in manager.gate] == ["sum(amount)", "count_distinct(customer_id)"]
    assert io(partition_column="day").gate == ()
    assert Mean("price").name == "mean(price)"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"partition_column": "day", "gate": "sum(amount)"},
            "gate= takes a list of aggregates, e.g. gate=[Sum('amount')], got 'sum(amount)'",
            id="a-string",
        ),
        pytest.param(
            {"partition_column": "day", "gate": [MinRowCount(1)]},
            "gate= takes aggregates (Sum, Mean, CountDistinct from "
            "databricks_bundle_decorators.checks), got MinRowCount(",
            id="a-check",
        ),
        pytest.param(
            {"partition_column": "day", "gate": [Sum("amount"), Sum("amount")]},
            "gate= declares sum(amount) twice",
            id="twice",
        ),
        pytest.param(
            {"gate": [Sum("amount")]},
            "gate= compares each key with the table's previous Delta version: it needs a "
            "partition_column and Delta (drop format='parquet')",
            id="no-partition-column",
        ),
        pytest.param(
            {"partition_column": "day", "format": "parquet", "gate": [Sum("amount")]},
            "it needs a partition_column and Delta",
            id="parquet",
        ),
    ],
)
def test_a_bad_gate_is_refused_at_definition_in_one_line(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        io(**options)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("column", ["amount) FROM x --", "a`b", "", "1st", "a b"])
def test_an_unsafe_column_name_is_refused_when_the_aggregate_is_written(column: str) -> None:
    for kind in (Sum, Mean, CountDistinct):
        with pytest.raises(ValueError, match="is not a valid column name"):
            kind(column)


def agg(before: float | None, after: float | None, measure: str = "sum(amount)") -> KeyChange:
    return KeyChange("main.s.t", "2024-01-05", before, after, 3, 4, measure)


def test_a_sum_that_drops_60_percent_stops_the_canary_naming_it() -> None:
    rows = KeyChange("main.s.t", "2024-01-05", 10, 10, 3, 4)
    stop, notes = gate_verdict([rows, agg(100.0, 40.0)], 10.0)
    assert stop == (
        "diff gate 10%: main.s.t key 2024-01-05: sum(amount) 100.0 -> 40.0 (-60%, versions 3 -> 4)"
    )
    assert notes == []
    assert gate_verdict([rows, agg(100.0, 105.0)], 10.0) == (None, [])


def test_zero_and_null_baselines() -> None:
    """A baseline of 0 or null that stays is no move; one that is left is outside the
    gate (reported, not a stop); a number that becomes null moved by -100%."""
    assert agg(0.0, 0.0).moved == 0.0 and agg(None, None).moved == 0.0
    stop, notes = gate_verdict([agg(0.0, 5.0), agg(None, 7.0)], 10.0)
    assert stop is None
    assert notes == [
        "outside the diff gate: main.s.t key 2024-01-05: sum(amount) 0.0 -> 5.0 (versions 3 -> 4)",
        "outside the diff gate: main.s.t key 2024-01-05: sum(amount) null -> 7.0 (versions 3 -> 4)",
    ]
    stop, _ = gate_verdict([agg(80.0, None)], 10.0)
    assert stop == (
        "diff gate 10%: main.s.t key 2024-01-05: sum(amount) 80.0 -> null (-100%, versions 3 -> 4)"
    )
    assert agg(-100.0, -40.0).moved == pytest.approx(0.6)  # relative to the baseline's size


_measure = st.one_of(
    st.none(), st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False)
)


@given(
    before=_measure,
    after=_measure,
    pct=st.floats(0, 1000),
)
def test_the_gate_stops_exactly_when_a_measure_moved_beyond_it(
    before: float | None, after: float | None, pct: float
) -> None:
    change = agg(before, after)
    stop, notes = gate_verdict([change], pct)
    moved = change.moved
    assert (stop is not None) == (moved is not None and abs(moved) * 100 > pct)
    assert (notes != []) == (moved is None)


@given(
    changes=st.lists(
        st.tuples(
            st.sampled_from(["rows", "sum(amount)", "count_distinct(customer_id)"]),
            _measure,
            _measure,
            st.one_of(st.none(), st.integers(0, 10**6)),
            st.integers(0, 10**6),
        ),
        max_size=5,
    )
)
def test_a_report_line_reads_back_as_it_was_written(
    changes: list[tuple[str, float | None, float | None, int | None, int]],
) -> None:
    found = tuple(
        KeyChange("main.s.t", "2024-01-05", b, a, bv, av, m) for m, b, a, bv, av in changes
    )
    report = MeasureReport("main.s.t", "write", True, found)
    (back,) = MeasureReport.from_lines(f"log line\n{report.to_line()}\nmore")
    assert back == report
    assert all(type(x.before) is type(y.before) for x, y in zip(back.changes, found, strict=True))


def test_a_report_with_a_non_number_is_refused() -> None:
    line = MeasureReport("t", "w", True, (agg(1.0, 2.0),)).to_line().replace("2.0", '"2"')
    with pytest.raises(ValueError, match="a malformed measure report line"):
        MeasureReport.from_lines(line)


@pytest.mark.parametrize(
    ("run_id", "backfill_id"),
    [("5503", "sales-1"), ("20240131T120000-1a2b3c4d", ""), ("5503", "a_b-c")],
)
def test_a_measure_order_reads_back_and_a_bad_one_names_its_parameter(
    run_id: str, backfill_id: str
) -> None:
    order = MeasureOrder(run_id, backfill_id, KeyRange("2024-01-01", "2024-01-03"))
    assert decode_order(encode_order(order)) == order
    with pytest.raises(ValueError, match="dbxdec_order"):
        encode_order(MeasureOrder("55;03", backfill_id, KeyRange("2024-01-01", "2024-01-03")))
    with pytest.raises(ValueError, match="job parameter dbxdec_order='run=x' is not"):
        decode_order("run=x")


def test_a_databricks_canary_s_commits_are_found_by_its_job_run_id() -> None:
    """Commits carry ``{{job.run_id}}-{{job.repair_count}}``; the launcher knows the job
    run id: any repair of that run is the run's, another run id sharing its digits is not."""
    history = [
        Commit(0, "WRITE", "dbxdec:j:t:77-0"),
        Commit(1, "WRITE", "dbxdec:j:t:5503-0:backfill=b"),
        Commit(2, "WRITE", "dbxdec:j:t:55031-0:backfill=other"),
        Commit(3, "WRITE", "dbxdec:j:t:5503-1:backfill=b"),  # a repair of the canary
    ]
    assert change_versions(history, "5503", "b") == (0, 3)
    assert change_versions(history, "550", "b") is None
    assert change_versions(history, "55031", "other") == (1, 2)
