"""Upserts by key (``write="upsert"``) on a real local Delta table: one table, written
once per module, then upserted; what each step left is compared row by row and read
back from ``DESCRIBE HISTORY``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import DailyBackfill
from databricks_bundle_decorators.runtime import (
    KeyScope,
    OutputContext,
    RunEnvironment,
    SparkTableIoManager,
)
from databricks_bundle_decorators.runtime.checks.shipped import Check, MinRowCount, Unique
from databricks_bundle_decorators.runtime.core.errors import OutputRejected, TaskRunError
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.storage.table_name import commit_identity, commit_metadata

from .pipelines import read_local, table_version

BACKFILL = DailyBackfill("2024-01-01")
D1, D2, D3 = "2024-03-01", "2024-03-02", "2024-03-03"
TABLE = "main.test.upserted_orders"
Row = tuple[str, str, int]  # order_id, day, amount


def orders(spark: Any, rows: list[Row]) -> Any:
    return spark.createDataFrame(rows, "order_id string, day string, amount bigint")


def upsert_io() -> SparkTableIoManager:
    return SparkTableIoManager(
        TABLE, partition_column="day", write="upsert", upsert_on=["order_id"]
    )


def write(
    spark: Any,
    warehouse: Path,
    keys: list[str],
    rows: list[Row],
    run_id: str,
    checks: tuple[Check, ...] = (),
) -> None:
    environment = RunEnvironment(spark, warehouse, run_id=run_id, backfill_id="bf-1")
    scope = KeyScope(BACKFILL, tuple(keys))
    context = OutputContext("job", "load", scope, environment, checks=checks)
    upsert_io().handle_output(context, orders(spark, rows))


def content(spark: Any, warehouse: Path) -> set[Row]:
    return {
        (r.order_id, r.day, int(r.amount)) for r in read_local(spark, warehouse, TABLE).collect()
    }


def last_commit(spark: Any, warehouse: Path) -> Any:
    path = local_table_path(TABLE, warehouse)
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()


BASE: list[Row] = [(f"{d}#{n}", d, n) for d in (D1, D2, D3) for n in range(3)]
# D2: order 1 changes, order 7 is new; orders 0 and 2 are not in the output
UPSERT: list[Row] = [(f"{D2}#1", D2, 100), (f"{D2}#7", D2, 7)]


@dataclass
class Story:
    warehouse: Path
    before: set[Row]
    after: set[Row]
    commit: Any
    version_after: int
    after_retry: set[Row]
    version_after_retry: int
    after_rerun: set[Row]
    version_after_rerun: int


@pytest.fixture(scope="module")
def story(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Story:
    """The base table (run r0 creates it), the upsert of D2 (run r1), a retried attempt
    of r1 with other rows, and a new run r2 of D2 with r1's rows."""
    warehouse = tmp_path_factory.mktemp("upsert") / "warehouse"
    write(spark, warehouse, [D1, D2, D3], BASE, "r0")
    before = content(spark, warehouse)
    # the checks judge the key's rows as the commit leaves them: 4, though the output has 2
    write(spark, warehouse, [D2], UPSERT, "r1", (MinRowCount(4), Unique("order_id")))
    after, commit = content(spark, warehouse), last_commit(spark, warehouse)
    version_after = table_version(spark, warehouse, TABLE)
    write(spark, warehouse, [D2], [(f"{D2}#1", D2, -1)], "r1")
    after_retry = content(spark, warehouse)
    version_after_retry = table_version(spark, warehouse, TABLE)
    write(spark, warehouse, [D2], UPSERT, "r2")
    return Story(
        warehouse,
        before,
        after,
        commit,
        version_after,
        after_retry,
        version_after_retry,
        content(spark, warehouse),
        table_version(spark, warehouse, TABLE),
    )


@pytest.mark.spark
def test_an_upsert_updates_inserts_and_keeps_the_key_s_other_rows(story: Story) -> None:
    assert story.before == set(BASE)
    of_d2 = {r for r in story.after if r[1] == D2}
    assert of_d2 == {
        (f"{D2}#0", D2, 0),
        (f"{D2}#1", D2, 100),
        (f"{D2}#2", D2, 2),
        (f"{D2}#7", D2, 7),
    }
    # every other key's rows are the rows they had
    assert {r for r in story.after if r[1] != D2} == {r for r in story.before if r[1] != D2}


@pytest.mark.spark
def test_the_upsert_is_one_replace_where_commit_carrying_the_run_s_identity(story: Story) -> None:
    commit = story.commit
    assert (commit.version, commit.operation) == (1, "WRITE")
    assert commit.operationParameters["predicate"] == f"`day` IN ('{D2}')"
    assert commit.userMetadata == commit_metadata(commit_identity("job", "load", "r1"), "bf-1")
    # txnAppId: a retried attempt of run r1 (other rows, same identity) is skipped by Delta
    assert story.version_after_retry == story.version_after == 1
    assert story.after_retry == story.after


@pytest.mark.spark
def test_running_the_key_again_changes_no_row(story: Story) -> None:
    assert story.version_after_rerun == 2  # a new run commits ...
    assert story.after_rerun == story.after  # ... the same rows


@pytest.mark.spark
def test_repeated_upsert_on_values_or_another_schema_write_nothing(
    story: Story, spark: Any
) -> None:
    rows = [(f"{D2}#1", D2, 1), (f"{D2}#1", D2, 2), (f"{D2}#3", D2, 3)]
    with pytest.raises(OutputRejected) as refused:
        write(spark, story.warehouse, [D2], rows, "r3")
    assert str(refused.value) == (
        f"task 'load': the output repeats upsert_on values of table {TABLE} "
        f"(order_id='{D2}#1' (2 rows)); each must occur once; nothing was written"
    )
    environment = RunEnvironment(spark, story.warehouse, run_id="r4")
    context = OutputContext("job", "load", KeyScope(BACKFILL, (D2,)), environment)
    wider = orders(spark, [(f"{D2}#1", D2, 1)]).selectExpr("*", "'x' AS note")
    with pytest.raises(TaskRunError, match=r"schema differs from table .* \(added note\)"):
        upsert_io().handle_output(context, wider)
    assert table_version(spark, story.warehouse, TABLE) == story.version_after_rerun
    assert content(spark, story.warehouse) == story.after_rerun


@pytest.mark.spark
def test_an_upsert_needs_keys_and_its_columns(spark: Any, tmp_path: Path) -> None:
    environment = RunEnvironment(spark, tmp_path, run_id="r")
    frame = orders(spark, [(f"{D1}#1", D1, 1)])
    unkeyed = OutputContext("job", "load", KeyScope(None), environment)
    with pytest.raises(TaskRunError, match=r"is written by upsert and this run has no backfill"):
        upsert_io().handle_output(unkeyed, frame)
    keyed = OutputContext("job", "load", KeyScope(BACKFILL, (D1,)), environment)
    with pytest.raises(TaskRunError, match=r"the output has no upsert_on column order_id "):
        upsert_io().handle_output(keyed, frame.withColumnRenamed("order_id", "id"))
    assert not local_table_path(TABLE, tmp_path).exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"write": "upsert"}, r"^write='upsert' needs upsert_on, a non-empty", id="none"
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": []}, r"needs upsert_on, .* got \[\]$", id="empty"
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": "order_id"}, r"got 'order_id'$", id="a-string"
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": ["a`b"]},
            r"^upsert_on column 'a`b' is not a valid column name",
            id="unsafe-name",
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": ["a", "a"]}, r"names a more than once$", id="twice"
        ),
        pytest.param(
            {"upsert_on": ["order_id"]},
            r"^upsert_on is for write='upsert' \(write is 'replace'\)",
            id="with-replace",
        ),
        pytest.param(
            {"write": "append_once", "upsert_on": ["order_id"]},
            r"\(write is 'append_once'\)",
            id="with-append-once",
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": ["order_id"], "partition_column": None},
            r"it needs a partition_column$",
            id="unpartitioned",
        ),
        pytest.param(
            {"write": "upsert", "upsert_on": ["order_id"], "format": "parquet"},
            r"drop format='parquet'$",
            id="parquet",
        ),
        pytest.param(
            {"write": "merge"}, r"^write must be 'replace', 'append_once' or 'upsert'", id="unknown"
        ),
    ],
)
def test_upsert_is_declared_with_safe_columns_a_partition_column_and_delta(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SparkTableIoManager("main.s.t", **{"partition_column": "day", **arguments})


PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@given(st.lists(st.text(alphabet="ab_1`' ;.-", min_size=0, max_size=4), max_size=3))
def test_upsert_on_is_accepted_exactly_when_its_names_are_plain_distinct_columns(
    names: list[str],
) -> None:
    acceptable = bool(names) and all(PLAIN.fullmatch(n) for n in names)
    acceptable = acceptable and len(set(names)) == len(names)
    try:
        io = SparkTableIoManager(
            "main.s.t", partition_column="day", write="upsert", upsert_on=names
        )
    except ValueError as refused:
        assert not acceptable and "\n" not in str(refused)
    else:
        assert acceptable and io.upsert_on == tuple(names) and io.write == "upsert"
