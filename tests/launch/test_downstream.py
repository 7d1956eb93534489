"""``dbxdec backfill A --downstream`` on real local Delta: issue 30's chain A (daily) ->
B (daily, reads A, lookback 1) -> C (monthly, reads B) over 2024-01-30..2024-02-02.

The order is asserted on the sequence the runs logged (``start`` when a task starts,
``end`` once its write committed), never on times; the content on the tables' rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers

from .downstream_project import A_OUT, B_OUT, C_OUT, events, table_rows, write_downstream_project

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RANGE = ("--start", "2024-01-30", "--end", "2024-01-31")
FOUR_DAYS = ("--start", "2024-01-30", "--end", "2024-02-02")
TABLES = (A_OUT, B_OUT, C_OUT)
A_KEYS = ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]
B_KEYS = [*A_KEYS, "2024-02-03"]  # B's 2024-02-03 reads A's 2024-02-02 (lookback 1)
B_READS = {  # B's key: the A keys it reads (its own day and, lookback 1, the day before)
    "2024-01-30": ["2024-01-30"],
    "2024-01-31": ["2024-01-30", "2024-01-31"],
    "2024-02-01": ["2024-01-31", "2024-02-01"],
    "2024-02-02": ["2024-02-01", "2024-02-02"],
    "2024-02-03": ["2024-02-02"],
}
C_READS = {"2024-01-01": B_KEYS[:2], "2024-02-01": B_KEYS[2:]}


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

    def downstream(self, *args: str) -> tuple[int, str, str]:
        """A fresh ``--downstream`` backfill of ds_a over the four days; the log emptied."""
        (self.root / "events.log").unlink(missing_ok=True)
        return self(
            "backfill", "ds_a", *FOUR_DAYS, "--downstream", "--local", "--new",
            "--max-concurrent", "3", "--poll-interval", "0.05", *args,
        )  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_downstream_project(tmp_path_factory.mktemp("downstream") / "proj")


@pytest.fixture
def dbxdec(project: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> Dbxdec:
    return Dbxdec(project, capsys)


@pytest.fixture(scope="module")
def before(project: Path, spark: Any) -> Path:
    """The three tables' content before any backfill: one ranged run of each job,
    outside any backfill (A labelled ``before``)."""
    for job, start, end, extra in (
        ("ds_a", "2024-01-28", "2024-02-03", ("--param", "label=before")),
        ("ds_b", "2024-01-29", "2024-02-03", ()),
        ("ds_c", "2024-01-01", "2024-02-01", ()),
    ):
        with pytest.raises(SystemExit) as done:
            main(["run", job, "--local", "--start", start, "--end", end, *extra,
                  "--project", str(project)])  # fmt: skip
        assert done.value.code == 0
    return project


def _position(log: list[tuple[str, ...]], what: str, job: str, key: str) -> int:
    return log.index((what, job, key))


def test_each_key_runs_after_what_it_reads_and_undo_restores_the_three_tables(
    before: Path, dbxdec: Dbxdec, spark: Any
) -> None:
    rows_before = {t: table_rows(spark, dbxdec.root, t) for t in TABLES}
    code, out, err = dbxdec.downstream("--param", "label=after")
    assert code == 0, out + err
    log = events(dbxdec.root)
    started = [(job, key) for what, job, key in log if what == "start"]
    assert sorted(started) == sorted(
        [("ds_a", k) for k in A_KEYS] + [("ds_b", k) for k in B_KEYS]
        + [("ds_c", "2024-01-01"), ("ds_c", "2024-02-01")]
    )  # fmt: skip
    for b_key, a_keys in B_READS.items():
        for a_key in a_keys:
            assert _position(log, "end", "ds_a", a_key) < _position(log, "start", "ds_b", b_key)
    for c_key, b_keys in C_READS.items():
        for b_key in b_keys:
            assert _position(log, "end", "ds_b", b_key) < _position(log, "start", "ds_c", c_key)
    # the data followed: B read A's new rows, C read B's new rows
    b_rows = {day: labels for day, _, labels in table_rows(spark, dbxdec.root, B_OUT)}
    assert b_rows["2024-01-31"] == "after@2024-01-30+after@2024-01-31"
    assert b_rows["2024-01-30"] == "after@2024-01-30+before@2024-01-29"
    c_rows = {day: labels for day, _, labels in table_rows(spark, dbxdec.root, C_OUT)}
    assert "after@2024-02-03" not in c_rows["2024-02-01"]  # A's 02-03 was not backfilled
    assert "after@2024-02-02" in c_rows["2024-02-01"]

    # one row in dbxdec backfills, listing the jobs
    code, listing, err = dbxdec("backfills", "--json")
    assert code == 0, err
    (ledger,) = list_ledgers(dbxdec.root, "ds_a")[:1]
    (row,) = [r for r in json.loads(listing) if r["id"] == ledger.id]
    assert row["jobs"] == ["ds_a", "ds_b", "ds_c"] and row["runs"] == 11
    assert row["job"] == "ds_a --downstream: ds_b, ds_c"

    code, out, err = dbxdec("backfill", "undo", ledger.id, "--yes")
    assert code == 0, out + err
    assert all(f"Restored {t}." in out for t in TABLES), out
    assert {t: table_rows(spark, dbxdec.root, t) for t in TABLES} == rows_before


def test_a_failed_key_blocks_exactly_the_keys_that_read_it(
    before: Path, dbxdec: Dbxdec, spark: Any
) -> None:
    code, out, err = dbxdec.downstream("--param", "fail_on=2024-01-31", "--param", "label=x")
    assert code == 1, out + err
    (ledger,) = list_ledgers(dbxdec.root, "ds_a")[:1]
    states = {(r.job, r.keys[0]): r.state for r in ledger.slices}
    blocked = {("ds_b", "2024-01-31"), ("ds_b", "2024-02-01")}
    blocked |= {("ds_c", "2024-01-01"), ("ds_c", "2024-02-01")}
    assert {s for s, state in states.items() if state == "pending"} == blocked
    assert {s for s, state in states.items() if state == "failed"} == {("ds_a", "2024-01-31")}
    done = {("ds_a", k) for k in ("2024-01-30", "2024-02-01", "2024-02-02")}
    done |= {("ds_b", k) for k in ("2024-01-30", "2024-02-02", "2024-02-03")}
    assert {s for s, state in states.items() if state == "succeeded"} == done
    # never launched; shown, counted, each with the upstream key that blocked it
    assert {(job, key) for what, job, key in events(dbxdec.root) if what == "start"} == {
        *done,
        ("ds_a", "2024-01-31"),
    }
    assert "6 succeeded, 1 failed, 0 not run, 4 blocked, of 11 runs" in out
    assert "BLOCKED ds_b 2024-02-01 (blocked by ds_a 2024-01-31, which failed)" in out
    assert "BLOCKED ds_c 2024-02-01 (blocked by ds_a 2024-01-31, which failed)" in out
    assert "1 of 11 runs failed, 4 blocked" in err
