"""``dbxdec backfill undo``: local backfills on real Delta tables, undone from the tables'
histories (``DESCRIBE HISTORY``), compared row by row with the content before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import (
    UndoOrder,
    encode_order,
    report_line,
)
from databricks_bundle_decorators.backfill.wire.provenance import split_provenance
from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.runtime import entrypoint
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_exists
from databricks_bundle_decorators.runtime.storage.table_name import split_metadata

from .undo_project import MODULE, table_history, table_rows, write_undo_project

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.connect_lane]

ORDERS = "main.undo.orders"
FRESH = "main.undo.fresh"
FIVE_DAYS = ("--start", "2024-01-03", "--end", "2024-01-07")


class Dbxdec:
    """``dbxdec ... --project ROOT`` in-process: exit code, stdout, stderr."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([*args, "--project", str(self.root)])
        out, err = self.capsys.readouterr()
        code = exit_info.value.code
        return (code if isinstance(code, int) else 1), out, err

    def backfill(self, job: str, *args: str) -> str:
        """A local backfill that must succeed; returns its id."""
        code, out, err = self("backfill", job, "--local", "--poll-interval", "0.05", *args)
        assert code == 0, out + err
        return list_ledgers(self.root, job)[0].id

    def run(self, *args: str) -> None:
        """One local run of ``undo_orders`` that belongs to no backfill."""
        code, out, err = self("run", "undo_orders", "--local", *args)
        assert code == 0, out + err


@pytest.fixture
def dbxdec(tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> Dbxdec:
    """A fresh project whose orders table already has content from an earlier run
    (2024-01-01..2024-01-04, label ``before``), written before any backfill."""
    cli = Dbxdec(write_undo_project(tmp_path / "proj"), capsys)
    cli.run("--start", "2024-01-01", "--end", "2024-01-04", "--param", "label=before")
    return cli


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


def test_undo_restores_the_content_from_before_a_five_day_backfill(
    dbxdec: Dbxdec, spark: Any
) -> None:
    before = table_rows(spark, dbxdec.root, ORDERS)
    assert {(day, label) for day, label, _ in before} >= {("2024-01-04", "before")}
    backfill_id = dbxdec.backfill("undo_orders", *FIVE_DAYS, "--param", "label=backfill")
    during = table_rows(spark, dbxdec.root, ORDERS)
    assert during != before
    assert {day for day, label, _ in during if label == "backfill"} == {
        f"2024-01-0{d}" for d in range(3, 8)
    }
    # the ledger's run ids are the ones the commits carry
    (ledger,) = list_ledgers(dbxdec.root, "undo_orders")
    run_ids = {a.run_id for r in ledger.slices for a in r.attempts}
    history = table_history(spark, dbxdec.root, ORDERS)
    assert [v for v, _, _ in history] == [0, 1, 2, 3, 4, 5]
    identities = [split_metadata(m) for *_, m in history if m]
    assert {i.rpartition(":")[2] for i, _ in identities[1:]} == run_ids
    assert all(
        i == f"dbxdec:undo_orders:write_orders:{i.rpartition(':')[2]}" for i, _ in identities
    )
    # every commit of the backfill names it (undo finds them by it); the earlier run's none
    assert [b for _, b in identities] == ["", *[backfill_id] * 5]

    code, out, err = dbxdec("backfill", "undo", backfill_id, "--dry-run")
    assert code == 0, out + err
    assert (
        f"{ORDERS}: restore version 5 to version 0 (undoes 5 commits of this backfill, "
        "versions 1-5)" in out
    )
    assert "Dry run: nothing was restored." in out
    assert table_rows(spark, dbxdec.root, ORDERS) == during

    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes")
    assert code == 0, out + err
    assert f"Restored {ORDERS}." in out
    assert table_rows(spark, dbxdec.root, ORDERS) == before
    # RESTORE takes no writer options: unlabelled, its version is recorded in the ledger
    assert table_history(spark, dbxdec.root, ORDERS)[-1] == (6, "RESTORE", None)
    assert list_ledgers(dbxdec.root, "undo_orders")[0].undone == {(ORDERS, 6)}
    # undoing twice changes nothing
    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes")
    assert code == 0, out + err
    assert f"{ORDERS}: already undone (version 6)" in out and "Nothing to undo." in out
    assert len(table_history(spark, dbxdec.root, ORDERS)) == 7


@pytest.mark.not_in_connect_lane(
    "lane budget: RESTORE and DESCRIBE HISTORY are the five-day undo test's"
)
def test_a_later_writer_makes_undo_refuse_and_force_restores(dbxdec: Dbxdec, spark: Any) -> None:
    before = table_rows(spark, dbxdec.root, ORDERS)
    backfill_id = dbxdec.backfill("undo_orders", *FIVE_DAYS, "--param", "label=backfill")
    dbxdec.run("--key", "2024-01-05", "--param", "label=later")  # not one of the backfill's runs
    later = table_history(spark, dbxdec.root, ORDERS)[-1]
    assert later[0] == 6 and later[2] is not None
    with_later = table_rows(spark, dbxdec.root, ORDERS)

    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes")
    assert code == 2, out + err
    line = one_error_line(err)
    assert line.startswith(f"Error: table {ORDERS}: version 6 (WRITE at 20") and line.endswith(
        f"by {split_provenance(later[2])[0]!r}) was committed by another writer after this "
        "backfill's first write "
        "(version 1); undo would discard it too; nothing was restored (rerun with --force to undo anyway)"
    )
    assert "also discards 1 commit by other writers: version 6" in out
    assert table_rows(spark, dbxdec.root, ORDERS) == with_later

    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes", "--force")
    assert code == 0, out + err
    assert table_rows(spark, dbxdec.root, ORDERS) == before


@pytest.mark.not_in_connect_lane(
    "lane budget: RESTORE and DESCRIBE HISTORY are the five-day undo test's"
)
def test_a_later_backfill_of_the_same_job_is_another_writer(dbxdec: Dbxdec, spark: Any) -> None:
    before = table_rows(spark, dbxdec.root, ORDERS)
    first = dbxdec.backfill("undo_orders", *FIVE_DAYS, "--param", "label=backfill")
    second = dbxdec.backfill("undo_orders", "--keys", "2024-01-09", "--param", "label=second")
    later = table_history(spark, dbxdec.root, ORDERS)[-1]
    # the commit's identity, then its provenance record (issue 43), which messages leave out
    identity = split_provenance(later[2] or "")[0]
    assert later[0] == 6 and identity.endswith(f":backfill={second}")

    code, out, err = dbxdec("backfill", "undo", first, "--yes")
    assert code == 2, out + err
    assert f"by {identity!r}) was committed by another writer after this backfill's" in (
        one_error_line(err)
    )
    code, out, err = dbxdec("backfill", "undo", first, "--yes", "--force")
    assert code == 0, out + err
    assert table_rows(spark, dbxdec.root, ORDERS) == before


@pytest.mark.not_in_connect_lane(
    "lane budget: RESTORE and DESCRIBE HISTORY are the five-day undo test's"
)
def test_a_table_the_backfill_created_is_emptied_only_with_force(
    dbxdec: Dbxdec, spark: Any
) -> None:
    assert not local_table_exists(FRESH, dbxdec.root / ".dbxdec" / "warehouse")
    backfill_id = dbxdec.backfill("undo_fresh", "--start", "2024-02-01", "--end", "2024-02-02")
    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes")
    assert code == 2, out + err
    assert one_error_line(err) == (
        f"Error: table {FRESH} was created by this backfill (version 0 is its first write), so "
        "it has no earlier version; undo would delete every row; nothing was restored "
        "(rerun with --force to undo anyway)"
    )
    assert len(table_rows(spark, dbxdec.root, FRESH)) == 4
    code, out, err = dbxdec("backfill", "undo", backfill_id, "--yes", "--force")
    assert code == 0, out + err
    assert table_rows(spark, dbxdec.root, FRESH) == []
    assert table_history(spark, dbxdec.root, FRESH)[-1][1:] == ("DELETE", None)
    version = table_history(spark, dbxdec.root, FRESH)[-1][0]
    assert list_ledgers(dbxdec.root, "undo_fresh")[0].undone == {(FRESH, version)}


@pytest.mark.not_in_connect_lane("lane budget: no Spark path of its own")
def test_undo_asks_first_and_a_no_changes_nothing(
    dbxdec: Dbxdec, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    backfill_id = dbxdec.backfill("undo_orders", "--keys", "2024-01-02", "--param", "label=b")
    during = table_rows(spark, dbxdec.root, ORDERS)
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, err = dbxdec("backfill", "undo", backfill_id)
    assert code == 130, out + err
    assert "Restore 1 table as shown? [y/N]" in err
    assert table_rows(spark, dbxdec.root, ORDERS) == during


def test_dbxdec_run_restores_a_task_s_tables_in_an_undo_run(
    dbxdec: Dbxdec, spark: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The code a Databricks undo run executes (``dbxdec-run --dbxdec_order=...`` per
    task), here on the local warehouse: refused over a later writer, restored with force."""
    before = table_rows(spark, dbxdec.root, ORDERS)
    backfill_id = dbxdec.backfill("undo_orders", "--keys", "2024-01-03,2024-01-04")
    dbxdec.run("--key", "2024-01-04", "--param", "label=later")
    (ledger,) = list_ledgers(dbxdec.root, "undo_orders")
    run_ids = tuple(sorted(a.run_id or "" for r in ledger.slices for a in r.attempts))
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(dbxdec.root / ".dbxdec" / "warehouse"))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)

    def dbxdec_run(task: str, order: UndoOrder) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            entrypoint.main(
                [
                    "--dbxdec_job=undo_orders",
                    f"--dbxdec_task={task}",
                    f"--dbxdec_module={MODULE}",
                    "--dbxdec_run_id=4242-0",
                    f"--dbxdec_order={encode_order(order)}",
                ]
            )
        out, err = capsys.readouterr()
        return int(exited.value.code or 0), out, err

    code, out, err = dbxdec_run("write_orders", UndoOrder(backfill_id, run_ids))
    assert code == 2, out + err
    assert one_error_line(err).startswith(f"Error: table {ORDERS}: version 3 (WRITE at ")
    assert f"undo of backfill {backfill_id}: {ORDERS}: restore version 3 to version 0" in out
    code, out, err = dbxdec_run("write_orders", UndoOrder(backfill_id, run_ids, force=True))
    assert code == 0, out + err
    assert table_rows(spark, dbxdec.root, ORDERS) == before
    restored = table_history(spark, dbxdec.root, ORDERS)[-1]
    assert restored[1:] == ("RESTORE", None)
    # the run reports the version it made, for the launcher to record in the ledger
    report = report_line("undo", {"table": ORDERS, "version": restored[0]})
    assert report in out.splitlines()
    code, out, err = dbxdec_run("noop", UndoOrder(backfill_id, run_ids, force=True))
    assert code == 0, out + err
    assert f"undo of backfill {backfill_id}: task 'noop' writes no table" in out
    assert table_history(spark, dbxdec.root, ORDERS)[-1] == restored
