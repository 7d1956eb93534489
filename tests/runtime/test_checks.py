"""Per-slice checks: construction rules and verdicts per key (no Spark needed)."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.runtime.checks.checking import TaskChecks, slice_failures
from databricks_bundle_decorators.runtime.checks.shipped import (
    ROWS_METRIC,
    Expect,
    FrameCheck,
    MaxNullFraction,
    MinRowCount,
    Unique,
)
from databricks_bundle_decorators.runtime.core.errors import CheckFailed


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MinRowCount(-1), "must be >= 0"),
        (lambda: MinRowCount(True), "whole number"),
        (lambda: MaxNullFraction("c", 1.5), "within 0..1"),
        (lambda: MaxNullFraction("bad name", 0.1), "not a valid column name"),
        (lambda: Unique(), "at least one column"),
        (lambda: Expect(42), "SQL boolean expression"),
        (lambda: FrameCheck("nope"), "needs a callable"),  # type: ignore[arg-type]
    ],
)
def test_invalid_checks_fail_at_definition(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_one_verdict_names_the_first_failure_and_counts_the_rest() -> None:
    checks = TaskChecks("t", (MinRowCount(2), FrameCheck(lambda frame: "never reached")))
    measured = {"2024-01-01": {ROWS_METRIC: 1}}
    with pytest.raises(CheckFailed) as raised:
        checks.judge(measured, keys=["2024-01-01", "2024-01-02"], frame=lambda: None, target="t1")
    assert str(raised.value) == (
        "task 't': check min_row_count(2) failed for key 2024-01-01: 1 row, expected at "
        "least 2 (and 1 more failure); nothing was written to t1"
    )


def test_frame_checks_run_once_every_slice_passes() -> None:
    frames: list[str] = []
    checks = TaskChecks("t", (FrameCheck(lambda frame: frames.append(frame) or "too odd"),))
    with pytest.raises(
        CheckFailed,
        match=r"check frame_check\(<lambda>\) failed for key "
        r"2024-01-01\.\.2024-01-02: too odd$",
    ):
        checks.judge({}, keys=[None], frame=lambda: "output", label="2024-01-01..2024-01-02")
    assert frames == ["output"]


def test_each_key_is_checked_and_a_key_without_rows_has_zero_rows() -> None:
    checks = [MinRowCount(2), MaxNullFraction("c", 0.25), Unique("id"), Expect("x > 0")]
    measured = {
        "2024-01-01": {ROWS_METRIC: 4, "c1_nulls": 1, "c2_duplicates": 0, "c3_failing": 0},
        "2024-01-02": {ROWS_METRIC: 4, "c1_nulls": 2, "c2_duplicates": 1, "c3_failing": 1},
    }
    failures = slice_failures(measured, checks, keys=["2024-01-01", "2024-01-02", "2024-01-03"])
    assert [f.render() for f in failures] == [
        "check max_null_fraction(c, 0.25) failed for key 2024-01-02: 2 of 4 rows (50.0%) have c null",
        "check unique(id) failed for key 2024-01-02: 1 duplicate rows on (id)",
        "check expect(x > 0) failed for key 2024-01-02: 1 of 4 rows do not satisfy it",
        "check min_row_count(2) failed for key 2024-01-03: 0 rows, expected at least 2",
    ]


def test_expect_tolerates_max_failing_and_frame_check_verdicts() -> None:
    check = Expect("x > 0", label="positive", max_failing=2)
    assert check.name == "expect(positive)"
    assert check.failure({ROWS_METRIC: 10, "c0_failing": 2}, "c0_") is None
    assert (
        check.failure({ROWS_METRIC: 10, "c0_failing": 3}, "c0_") == "3 of 10 rows do not satisfy it"
    )
    assert FrameCheck(lambda frame: True).frame_failure(object()) is None
    assert FrameCheck(lambda frame: False).frame_failure(object()) == "returned False"
    assert FrameCheck(lambda frame: "too few", label="x").frame_failure(object()) == "too few"
    assert Unique("a", "b").needs_grouping and not MinRowCount(1).needs_grouping
