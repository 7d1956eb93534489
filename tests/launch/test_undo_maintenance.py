"""Undo after table maintenance (what predictive optimization does on Databricks by
itself): OPTIMIZE and VACUUM commits are no other writer; a VACUUM that removed the files
of the version to restore makes undo refuse in one line, changing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

from .test_undo import ORDERS, Dbxdec, dbxdec, one_error_line
from .undo_project import table_history, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]
__all__ = ["dbxdec"]  # the fixture, shared with test_undo


@contextmanager
def local_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """Local-session settings for open-source Delta (never on the Databricks path):
    VACUUM logs its START/END commits only when asked, and refuses a retention under
    7 days unless its check is off."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


TWO_DAYS = "2024-01-03,2024-01-04"
VACUUM_LOGGED = {"spark.databricks.delta.vacuum.logging.enabled": "true"}
NO_RETENTION_CHECK = {
    **VACUUM_LOGGED,
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
}


def orders_sql(dbxdec: Dbxdec) -> str:
    path = local_table_path(ORDERS, dbxdec.root / ".dbxdec" / "warehouse")
    return "delta.`" + str(path) + "`"


def test_maintenance_is_no_other_writer_but_vacuumed_files_and_data_changes_refuse(
    dbxdec: Dbxdec, spark: Any
) -> None:
    """One project, three undos (a fixture and a backfill each would cost ~30 s)."""
    before = table_rows(spark, dbxdec.root, ORDERS)
    first = dbxdec.backfill("undo_orders", "--keys", TWO_DAYS, "--param", "label=backfill")
    table = orders_sql(dbxdec)
    # 1. OPTIMIZE (compacting the backfill's files) and a default VACUUM: undo restores
    optimized = spark.sql(f"OPTIMIZE {table}").first()
    assert optimized is not None and optimized.metrics.numFilesRemoved >= 2
    with local_conf(spark, VACUUM_LOGGED):
        spark.sql(f"VACUUM {table}").collect()  # the default 7-day retention
    operations = [op for _, op, _ in table_history(spark, dbxdec.root, ORDERS)]
    assert operations[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"]

    code, out, err = dbxdec("backfill", "undo", first, "--yes")
    assert code == 0, out + err
    assert f"Restored {ORDERS}." in out
    assert table_rows(spark, dbxdec.root, ORDERS) == before
    # the RESTORE carries no label: its version is read back and kept in the ledger
    history = table_history(spark, dbxdec.root, ORDERS)
    restored = history[-1][0]
    assert history[-1][1] == "RESTORE"
    (ledger,) = list_ledgers(dbxdec.root, "undo_orders")
    assert ledger.undone == {(ORDERS, restored)}
    code, out, err = dbxdec("backfill", "undo", first, "--yes")
    assert code == 0, out + err
    assert f"{ORDERS}: already undone (version {restored})" in out
    assert table_history(spark, dbxdec.root, ORDERS) == history

    # 2. a VACUUM that removed the files of the version to restore: one line, no change
    second = dbxdec.backfill("undo_orders", "--keys", "2024-01-03", "--param", "label=again")
    with local_conf(spark, NO_RETENTION_CHECK):
        spark.sql(f"VACUUM {table} RETAIN 0 HOURS").collect()
    history = table_history(spark, dbxdec.root, ORDERS)
    vacuum_end = history[-1]
    assert vacuum_end[1] == "VACUUM END"
    during = table_rows(spark, dbxdec.root, ORDERS)
    code, out, err = dbxdec("backfill", "undo", second, "--yes", "--force")
    assert code == 2, out + err
    line = one_error_line(err)
    assert line.startswith(
        f"Error: table {ORDERS}: version {restored} cannot be restored: version "
        f"{vacuum_end[0]} (VACUUM END at "
    ), line
    assert line.endswith("deleted data files it needs; nothing was restored"), line
    assert table_rows(spark, dbxdec.root, ORDERS) == during
    assert table_history(spark, dbxdec.root, ORDERS) == history

    # 3. a data change by another writer after the maintenance still refuses, precisely
    spark.sql(f"DELETE FROM {table} WHERE day = '2024-01-01'").collect()
    deleted = table_history(spark, dbxdec.root, ORDERS)[-1]
    assert deleted[1] == "DELETE"
    during = table_rows(spark, dbxdec.root, ORDERS)
    code, out, err = dbxdec("backfill", "undo", second, "--yes")
    assert code == 2, out + err
    assert one_error_line(err).startswith(
        f"Error: table {ORDERS}: version {deleted[0]} (DELETE at 20"
    )
    assert "without userMetadata) was committed by another writer after this backfill's" in err
    assert table_rows(spark, dbxdec.root, ORDERS) == during
