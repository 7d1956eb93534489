"""A check of your own (``checks.UserCheck``): a name, conditions and a verdict; dbxdec
counts the conditions per key with the shipped checks and judges each key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from databricks_bundle_decorators import task
from databricks_bundle_decorators.checks import UserCheck
from databricks_bundle_decorators.definitions.contracts import CountedCheck, as_check
from databricks_bundle_decorators.errors import DefinitionError
from databricks_bundle_decorators.runtime.checks.checking import slice_failures
from databricks_bundle_decorators.runtime.checks.metering import Metering
from databricks_bundle_decorators.runtime.checks.shipped import ROWS_METRIC, MinRowCount


class NoNegativeAmounts:
    name = "no_negative_amounts"
    severity = "error"

    def conditions(self) -> Mapping[str, Any]:
        return {"negative": "amount < 0", "missing": "amount IS NULL"}

    def verdict(self, counts: Mapping[str, int], rows: int) -> str | None:
        bad = counts["negative"] + counts["missing"]
        return f"{bad} of {rows} rows have no positive amount" if bad else None


def test_a_user_check_is_wrapped_at_decoration_and_keeps_its_name() -> None:
    @task(checks=[MinRowCount(1), NoNegativeAmounts()])
    def clean() -> None: ...

    first, mine = clean.checks
    assert isinstance(first, MinRowCount) and isinstance(mine, CountedCheck)
    assert isinstance(NoNegativeAmounts(), UserCheck)
    assert mine.name == "no_negative_amounts" and mine.severity == "error"


def test_an_object_without_the_protocol_is_still_refused() -> None:
    class Half:
        name = "half"

        def conditions(self) -> Mapping[str, Any]:
            return {}

    with pytest.raises(DefinitionError, match="checks must be Check objects"):

        @task(checks=[Half()])
        def clean() -> None: ...


def test_a_bad_severity_of_a_user_check_is_refused() -> None:
    class Loud(NoNegativeAmounts):
        severity = "fatal"

    with pytest.raises(ValueError, match="severity must be 'error' or 'warn'"):
        as_check(Loud())


def test_a_warning_user_check_is_judged_as_a_warning() -> None:
    class Soft(NoNegativeAmounts):
        severity = "warn"

    assert as_check(Soft()).severity == "warn"


@pytest.mark.spark
def test_the_conditions_are_counted_per_key_and_each_key_judged(spark: Any) -> None:
    rows = [
        ("2024-01-01", 5),
        ("2024-01-01", 7),
        ("2024-01-02", -1),
        ("2024-01-02", None),
        ("2024-01-02", 3),
    ]
    frame = spark.createDataFrame(rows, "day string, amount bigint")
    checks = (as_check(NoNegativeAmounts()),)
    measured = Metering(checks, "day").measure(frame)
    assert measured == {
        "2024-01-01": {ROWS_METRIC: 2, "c0_negative": 0, "c0_missing": 0},
        "2024-01-02": {ROWS_METRIC: 3, "c0_negative": 1, "c0_missing": 1},
    }
    failures = slice_failures(measured, checks, keys=["2024-01-01", "2024-01-02"])
    assert [f.render() for f in failures] == [
        "check no_negative_amounts failed for key 2024-01-02: 2 of 3 rows have no positive amount"
    ]
