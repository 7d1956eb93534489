"""Baselines of checks that compare keys (no Spark): which committed neighbours a key
is compared with, whatever order they were committed in, and the verdicts, warnings
and refusals of the checks built on them."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.checks import (
    Expect,
    FrameCheck,
    MaxNullFraction,
    MinRowCount,
    RowCountWithin,
    Unique,
)
from databricks_bundle_decorators.runtime.checks.baselines import BaselineSpec, baseline_for
from databricks_bundle_decorators.runtime.checks.checking import TaskChecks
from databricks_bundle_decorators.runtime.checks.shipped import ROWS_METRIC
from databricks_bundle_decorators.runtime.core.errors import CheckFailed

DAY0 = date(2024, 1, 1)
days = st.integers(min_value=0, max_value=60).map(lambda n: (DAY0 + timedelta(n)).isoformat())
specs = st.builds(
    BaselineSpec,
    st.sampled_from(["median", "mean"]),
    st.sampled_from(["prev", "next", "around"]),
    st.integers(min_value=1, max_value=5).map(lambda n: n * 2),
)


@given(spec=specs, key=days, committed=st.lists(days, max_size=30), seed=st.randoms())
def test_neighbours_are_the_nearest_committed_keys_in_any_order(
    spec: BaselineSpec, key: str, committed: list[str], seed: object
) -> None:
    chosen = spec.neighbours(key, committed)
    shuffled = list(committed) * 2  # committed in another order, some keys twice
    seed.shuffle(shuffled)  # type: ignore[attr-defined]
    assert spec.neighbours(key, shuffled) == chosen
    before = sorted({k for k in committed if k < key})
    after = sorted({k for k in committed if k > key})
    if spec.side == "prev":
        expected = tuple(before[-spec.count :]) if len(before) >= spec.count else None
    elif spec.side == "next":
        expected = tuple(after[: spec.count]) if len(after) >= spec.count else None
    else:
        half = spec.count // 2
        enough = len(before) >= half and len(after) >= half
        expected = tuple(before[-half:] + after[:half]) if enough else None
    assert chosen == expected
    if chosen is not None:
        assert key not in chosen and len(chosen) == spec.count
        assert list(chosen) == sorted(chosen)


@given(key=days, committed=st.dictionaries(days, st.integers(0, 1000), max_size=20))
def test_a_baseline_is_missing_exactly_when_too_few_neighbours_are_committed(
    key: str, committed: dict[str, int]
) -> None:
    spec = BaselineSpec.parse("median_prev_3")
    baseline = baseline_for(spec, key, committed)
    earlier = [k for k in committed if k < key]
    assert (baseline.value is None) == (len(earlier) < 3)
    if baseline.value is None:
        assert baseline.missing == (
            f"no baseline: {len(earlier)} committed keys before {key}, median_prev_3 needs 3"
        )
    else:
        assert [k for k, _ in baseline.counts] == sorted(earlier)[-3:]


def test_two_dimensional_keys_have_neighbours_of_their_own_static_value_only() -> None:
    committed = {"eu:2024-01-01": 5, "us:2024-01-02": 7, "eu:2024-01-02": 6}
    baseline = baseline_for(BaselineSpec.parse("mean_prev_2"), "eu:2024-01-03", committed)
    assert baseline.counts == (("eu:2024-01-01", 5), ("eu:2024-01-02", 6))
    assert baseline.value == 5.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("median_prev", "is not <median|mean>_<prev|next|around>_<n>"),
        ("mode_prev_3", "is not <median|mean>"),
        ("median_around_3", "'around' takes an even number"),
        ("median_prev_0", "is not <median|mean>"),
    ],
)
def test_a_bad_baseline_is_refused_at_definition(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RowCountWithin(20, text)


def judged(check: RowCountWithin, rows: int, committed: dict[str, int], key: str) -> object:
    spec = check.baseline_spec
    values = {ROWS_METRIC: rows, spec.metric: baseline_for(spec, key, committed)}
    return TaskChecks("t", (check,)).judge({key: values}, keys=[key], frame=lambda: None)


SEVEN = {f"2024-01-0{d}": 100 + d for d in range(1, 8)}


def test_a_relative_check_fails_naming_the_baseline_keys_and_values() -> None:
    with pytest.raises(CheckFailed) as failed:
        judged(RowCountWithin(20), 50, SEVEN, "2024-01-08")
    assert str(failed.value) == (
        "task 't': check row_count_within(20%, median_prev_7) failed for key 2024-01-08: "
        "50 rows, 52% below the baseline 104 (median of 2024-01-01=101, 2024-01-02=102, "
        "2024-01-03=103, 2024-01-04=104, 2024-01-05=105, 2024-01-06=106, "
        "2024-01-07=107); allowed within 20%"
    )
    (passed,) = judged(RowCountWithin(20), 120, SEVEN, "2024-01-08")  # type: ignore[misc]
    assert (passed.passed, passed.detail, passed.measured) == (True, "", 120.0)


def test_a_warning_is_recorded_and_raises_nothing_and_frame_checks_still_run() -> None:
    seen: list[object] = []
    checks = TaskChecks(
        "t",
        (RowCountWithin(20, severity="warn"), FrameCheck(lambda f: seen.append(f) or None)),
    )
    spec = BaselineSpec.parse("median_prev_7")
    values = {ROWS_METRIC: 10, spec.metric: baseline_for(spec, "2024-01-08", SEVEN)}
    results = checks.judge({"2024-01-08": values}, keys=["2024-01-08"], frame=lambda: "out")
    assert [(r.passed, r.severity) for r in results] == [(False, "warn"), (True, "error")]
    assert seen == ["out"]
    assert results[0].detail.startswith("10 rows, 90% below the baseline 104")


def test_a_warning_does_not_hide_an_error() -> None:
    checks = TaskChecks("t", (MinRowCount(5, severity="warn"), MinRowCount(3)))
    with pytest.raises(CheckFailed, match=r"min_row_count\(3\) failed for key k: 1 row,"):
        checks.judge({"k": {ROWS_METRIC: 1}}, keys=["k"], frame=lambda: None)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: MinRowCount(1, on_fail="quarantine"), id="min_row_count"),
        pytest.param(lambda: MaxNullFraction("c", 0.1, on_fail="quarantine"), id="null_fraction"),
        pytest.param(lambda: Unique("id", on_fail="quarantine"), id="unique"),
        pytest.param(lambda: FrameCheck(bool, on_fail="quarantine"), id="frame"),
        pytest.param(lambda: RowCountWithin(10, on_fail="quarantine"), id="row_count_within"),
    ],
)
def test_quarantine_is_refused_on_checks_that_are_not_row_level(make: object) -> None:
    with pytest.raises(ValueError) as refused:
        make()  # type: ignore[operator]
    message = str(refused.value)
    assert "on_fail='quarantine' needs a row-level check (Expect)" in message
    assert "\n" not in message


def test_severity_and_on_fail_are_checked_and_a_row_level_check_quarantines() -> None:
    with pytest.raises(ValueError, match="severity must be 'error' or 'warn', got 'info'"):
        Unique("id", severity="info")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_fail must be 'fail' or 'quarantine'"):
        Expect("a > 0", on_fail="drop")  # type: ignore[arg-type]
    assert Expect("a > 0", on_fail="quarantine").on_fail == "quarantine"


def test_a_result_keeps_its_severity_across_the_wire_and_older_ones_are_errors() -> None:
    warned = CheckResult("c", "2024-01-01", 1.0, ">= 2", False, severity="warn")
    assert CheckResult.from_json(warned.to_json()) == warned
    older = {k: v for k, v in warned.to_json().items() if k != "severity"}
    assert CheckResult.from_json(older).severity == "error"
