"""Checks that compare keys, warnings and quarantine on real Delta tables, driven by
local backfills: a relative check fails naming its baseline keys and values, passes
with "no baseline" at the start of the range, a ``warn`` check is recorded without
failing, and quarantined rows are replaced per key on a re-run and restored by undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.inputs.options import load_project
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from databricks_bundle_decorators.runtime.running.local import run_job_locally
from tests.cli.clirun import run

from .relchecks_project import backfill, dbxdec, results, rows_per_key, write_project

pytestmark = [pytest.mark.spark]

STEADY = "main.rel.steady"
ORDERS = "main.rel.orders"
QUARANTINE = "main.rel.orders__quarantine"
RANGE = ("--start", "2024-01-01", "--end", "2024-01-03", "--batch-size", "3")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj")


def test_a_relative_check_names_its_baseline_and_passes_without_one_at_the_start(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = backfill(capsys, root, "rel_steady", *RANGE)
    assert code == 0, out
    first = sorted(results(spark, root, "rel_steady"), key=lambda r: r["key"])
    assert [(r["key"], r["passed"], r["detail"]) for r in first] == [
        (f"2024-01-0{d}", True, f"no baseline: 0 committed keys before 2024-01-0{d}, "
         "median_prev_3 needs 3")
        for d in (1, 2, 3)
    ]  # fmt: skip

    code, out = backfill(capsys, root, "rel_steady", "--keys", "2024-01-04", "--param", "rows=5")
    assert code == 1, out
    assert (
        "check row_count_within(20%, median_prev_3) failed for key 2024-01-04: 5 rows, 50% "
        "below the baseline 10 (median of 2024-01-01=10, 2024-01-02=10, 2024-01-03=10); "
        "allowed within 20%; nothing was written to main.rel.steady"
    ) in out
    assert "2024-01-04" not in rows_per_key(spark, root, STEADY)
    failed = [r for r in results(spark, root, "rel_steady") if r["key"] == "2024-01-04"]
    assert [(r["passed"], r["measured"], r["severity"]) for r in failed] == [(False, 5.0, "error")]

    code, out = backfill(capsys, root, "rel_steady", "--keys", "2024-01-04", "--param", "rows=11")
    assert code == 0, out
    assert rows_per_key(spark, root, STEADY)["2024-01-04"] == 11


def test_a_warning_is_recorded_and_the_slice_is_written(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = backfill(capsys, root, "rel_watched", *RANGE)
    assert code == 0, out
    code, out = backfill(capsys, root, "rel_watched", "--keys", "2024-01-04", "--param", "rows=5")
    assert code == 0, out
    assert "Checks: 1 result (0 passed, 0 failed, 1 warned)" in out
    assert rows_per_key(spark, root, "main.rel.watched")["2024-01-04"] == 5
    (warned,) = [r for r in results(spark, root, "rel_watched") if r["key"] == "2024-01-04"]
    assert (warned["passed"], warned["severity"]) == (False, "warn")
    assert warned["detail"].startswith("5 rows, 50% below the baseline 10 (median of ")
    ledger = list_ledgers(root, "rel_watched")[0]  # newest first
    (check,) = ledger.slices[0].last.checks  # type: ignore[union-attr]
    assert (check["passed"], check["severity"]) == (False, "warn")


def test_in_reverse_order_each_key_is_compared_with_the_neighbours_committed_before_it(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``median_next_1`` over 2024-01-01..02 run newest first: 2024-01-01's next
    neighbour was written by the previous run of the same backfill and is read from the
    table as committed (a forward run would find no baseline for either key)."""
    code, out = backfill(
        capsys, root, "rel_ahead", "--start", "2024-01-01", "--end", "2024-01-02",
        "--order", "reverse", "--max-concurrent", "1",
    )  # fmt: skip
    assert code == 0, out
    assert "Checks: 2 results (1 passed, 0 failed, 1 warned)" in out
    assert rows_per_key(spark, root, "main.rel.ahead") == {"2024-01-01": 10, "2024-01-02": 20}
    found = {r["key"]: r["detail"] for r in results(spark, root, "rel_ahead")}
    assert found == {
        "2024-01-02": "no baseline: 0 committed keys after 2024-01-02, median_next_1 needs 1",
        "2024-01-01": "10 rows, 50% below the baseline 20 (median of 2024-01-02=20); "
        "allowed within 20%",
    }


def quarantined(spark: Any, root: Path) -> dict[str, int]:
    return rows_per_key(spark, root, QUARANTINE)


def test_quarantined_rows_are_replaced_per_key_and_restored_by_undo(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = backfill(capsys, root, "rel_orders", "--keys", "2024-01-01", "--param", "bad=2")
    assert code == 0, out
    assert rows_per_key(spark, root, ORDERS) == {"2024-01-01": 8}
    assert quarantined(spark, root) == {"2024-01-01": 2}
    path = local_table_path(QUARANTINE, root / ".dbxdec" / "warehouse")
    moved = spark.read.format("delta").load(str(path)).collect()
    assert {(r["day"], r["amount"], r["dbxdec_failed_checks"]) for r in moved} == {
        ("2024-01-01", -1, "expect(amount)")
    }
    (result,) = results(spark, root, "rel_orders")
    assert (result["passed"], result["detail"]) == (True, "2 rows quarantined")

    # a re-run replaces the key's quarantined rows, never adds to them
    code, out = backfill(capsys, root, "rel_orders", "--keys", "2024-01-01", "--param", "bad=1")
    assert code == 0, out
    assert quarantined(spark, root) == {"2024-01-01": 1}
    assert rows_per_key(spark, root, ORDERS) == {"2024-01-01": 9}

    code, out = backfill(capsys, root, "rel_orders", "--keys", "2024-01-02", "--param", "bad=3")
    assert code == 0, out
    assert quarantined(spark, root) == {"2024-01-01": 1, "2024-01-02": 3}
    backfill_id = list_ledgers(root, "rel_orders")[0].id
    code, out = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes")
    assert code == 0, out
    assert f"Restored {QUARANTINE}." in out
    assert quarantined(spark, root) == {"2024-01-01": 1}
    assert rows_per_key(spark, root, ORDERS) == {"2024-01-01": 9}


def test_catch_up_by_data_reads_the_output_table_never_its_quarantine_table(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2024-01-01 has rows in ``orders`` only (none failed), 2024-01-02 in
    ``orders__quarantine`` only (every row failed): the first is present, the second
    still missing, as is 2024-01-03 (nowhere). Rows are appended as the task and its
    quarantine write them; here only the data matters."""
    warehouse = root / ".dbxdec" / "warehouse"
    for table, row, schema in (
        (ORDERS, ("2024-01-01", 0, 5), ""),
        (QUARANTINE, ("2024-01-02", 0, -1, "expect(amount)"), ", dbxdec_failed_checks string"),
    ):
        frame = spark.createDataFrame([row], f"day string, n int, amount int{schema}")
        frame.write.format("delta").mode("append").save(str(local_table_path(table, warehouse)))
    code, out, err = run(
        ["catchup", "rel_orders", "--start", "2024-01-01", "--end", "2024-01-03", "--by",
         "data", "--local", "--dry-run", "--json", "--project", str(root)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    planned = [entry["keys"] for entry in json.loads(out)["runs"]]
    assert planned == [["2024-01-02"], ["2024-01-03"]]


def test_a_retry_completes_a_quarantine_commit_its_first_attempt_missed(
    spark: Any, root: Path
) -> None:
    """The first attempt commits the main table, then cannot write the quarantine (its
    folder is blocked by a file); the retry of the same run skips the main commit
    (recorded already) and commits the quarantine with the same transaction id."""
    config, registry = load_project(root, ())
    warehouse = root / ".dbxdec" / "warehouse"
    path = local_table_path(QUARANTINE, warehouse)
    path.parent.mkdir(parents=True)
    path.write_text("in the way")
    params = {"backfill_key": "2024-01-05", "bad": "4"}
    first = run_job_locally(registry, "rel_orders", params=params, warehouse=warehouse, run_id="r1")
    assert not first.succeeded
    assert rows_per_key(spark, root, ORDERS) == {"2024-01-05": 6}
    path.unlink()
    again = run_job_locally(registry, "rel_orders", params=params, warehouse=warehouse, run_id="r1")
    assert again.succeeded
    main_log = sorted((local_table_path(ORDERS, warehouse) / "_delta_log").glob("*.json"))
    assert len(main_log) == 1  # the retry's main commit was skipped
    assert quarantined(spark, root) == {"2024-01-05": 4}
    (commit,) = sorted((path / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    txn = next(a["txn"] for a in actions if "txn" in a)
    assert txn["appId"] == "dbxdec:rel_orders:write_orders:r1" and txn["version"] == 0
    del config
