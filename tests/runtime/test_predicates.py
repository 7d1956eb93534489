"""Values reaching SQL predicates are quoted, never interpolated raw."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill, StaticBackfill
from databricks_bundle_decorators.runtime import KeyScope, SparkTableIoManager
from databricks_bundle_decorators.runtime.core.predicates import (
    check_column,
    keys_predicate,
    quote_identifier,
    quote_literal,
    timestamp_literal,
    windows_predicate,
)


@pytest.mark.parametrize(
    "key",
    ["eu'", "eu';DROP TABLE x", "a;b", "o'brien", "x' OR '1'='1", "", " eu", "../etc", "eu\\"],
)
def test_static_keys_with_quotes_or_semicolons_are_rejected_at_definition(key: str) -> None:
    with pytest.raises(ValueError, match="is not allowed"):
        StaticBackfill(keys=["us", key])


def test_keys_predicate_quotes_every_value() -> None:
    assert keys_predicate("region", ["eu", "it's", "a\\b"]) == (
        "`region` IN ('eu', 'it\\'s', 'a\\\\b')"
    )
    assert keys_predicate("region", []) == "FALSE"


@pytest.mark.parametrize("column", ["a b", "x`y", "1abc", "a;b", "", "a.b"])
def test_column_names_are_checked(column: str) -> None:
    with pytest.raises(ValueError, match="is not a valid column name"):
        check_column(column)
    with pytest.raises(ValueError):
        SparkTableIoManager("main.s.t", partition_column=column)


def test_identifiers_are_backtick_quoted() -> None:
    assert quote_identifier("day") == "`day`"
    assert quote_identifier("we`ird") == "`we``ird`"


@pytest.mark.parametrize(
    "name", ["main.s", "main.s.t.u", "main.s.t;", "main.s.`t`", "main..t", "1a.b.c"]
)
def test_table_names_are_three_plain_parts(name: str) -> None:
    with pytest.raises(ValueError, match=r"must be catalog\.schema\.table"):
        SparkTableIoManager(name)


def test_timestamp_literal_is_utc() -> None:
    berlin = timezone(timedelta(hours=1))
    assert timestamp_literal(datetime(2024, 1, 1, 0, 30, tzinfo=berlin)) == (
        "TIMESTAMP '2023-12-31 23:30:00Z'"
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        timestamp_literal(datetime(2024, 1, 1))


def test_read_predicate_uses_keys_and_merged_windows() -> None:
    io = SparkTableIoManager("main.s.t", partition_column="day", time_column="ts")
    scope = KeyScope(
        DailyBackfill("2024-01-01", tz="Europe/Berlin"), ("2024-01-01", "2024-01-02", "2024-01-04")
    )
    assert io.read_predicate(scope) == (
        "(`day` IN ('2024-01-01', '2024-01-02', '2024-01-04')) AND "
        "(((`ts` >= TIMESTAMP '2023-12-31 23:00:00Z' AND `ts` < TIMESTAMP '2024-01-02 23:00:00Z')"
        " OR (`ts` >= TIMESTAMP '2024-01-03 23:00:00Z' AND `ts` < TIMESTAMP '2024-01-04 23:00:00Z')))"
    )
    assert io.read_predicate(KeyScope.everything(scope.backfill)) is None
    assert io.replace_predicate(scope) == "`day` IN ('2024-01-01', '2024-01-02', '2024-01-04')"


def test_static_scope_filters_by_equality() -> None:
    io = SparkTableIoManager("main.s.t", partition_column="region", time_column="ts")
    scope = KeyScope(StaticBackfill(keys=["eu", "us"]), ("eu",))
    assert io.read_predicate(scope) == "`region` IN ('eu')"
    assert windows_predicate("ts", []) == "FALSE"


@pytest.mark.spark
@settings(max_examples=60, deadline=None)
@given(value=st.text(max_size=30))
def test_quoted_literal_parses_back_to_the_same_string(spark: Any, value: str) -> None:
    """Whatever the text (quotes, ;, backslashes, newlines), Spark reads one literal."""
    from pyspark.sql import functions as F

    parsed = F.expr(quote_literal(value))
    assert spark.range(1).select(parsed.alias("v")).first().v == value  # type: ignore[union-attr]
