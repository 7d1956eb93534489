"""``dbxdec backfill A --downstream`` on real local Delta: issue 30's chain A (daily) ->
B (daily, reads A, lookback 1) -> C (monthly, reads B) over 2024-01-30..2024-02-02.

One scenario, so that the suite pays for one chain (19 runs would be two): A's
2024-01-31 fails, which blocks exactly the keys that read it; once fixed, ``--resume``
runs the failed and blocked keys, each after what it reads; ``undo`` then restores the
three tables. The order is asserted on the sequence the runs logged (``start`` when a
task starts, ``end`` once its write committed), never on times; the content on rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from tests.cli.clirun import Cli

from .downstream_project import (
    A_OUT,
    B_OUT,
    C_OUT,
    events,
    own_jobs,
    table_rows,
    write_downstream_project,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

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
EVERY_SLICE = {
    *(("ds_a", k) for k in A_KEYS),
    *(("ds_b", k) for k in B_KEYS),
    ("ds_c", "2024-01-01"),
    ("ds_c", "2024-02-01"),
}
BLOCKED = {("ds_b", "2024-01-31"), ("ds_b", "2024-02-01")}
BLOCKED |= {("ds_c", "2024-01-01"), ("ds_c", "2024-02-01")}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Iterator[Path]:
    """The chain, and the three tables' content from one ranged run of each job,
    outside any backfill (A labelled ``before``)."""
    with own_jobs():
        yield from _project(tmp_path_factory)


def _project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = write_downstream_project(tmp_path_factory.mktemp("downstream") / "proj")
    for job, start, end, extra in (
        ("ds_a", "2024-01-28", "2024-02-03", ("--param", "label=before")),
        ("ds_b", "2024-01-29", "2024-02-03", ()),
        ("ds_c", "2024-01-01", "2024-02-01", ()),
    ):
        with pytest.raises(SystemExit) as done:
            main(["run", job, "--local", "--start", start, "--end", end, *extra,
                  "--project", str(root)])  # fmt: skip
        assert done.value.code == 0
    (root / "events.log").unlink()
    yield root


def _at(log: list[tuple[str, ...]], what: str, job: str, key: str) -> int:
    (position,) = [i for i, event in enumerate(log) if event == (what, job, key)]
    return position


def _states(root: Path) -> dict[tuple[str | None, str], str]:
    ledger = list_ledgers(root)[0]  # whole: list_ledgers(root, "ds_a") is A's part
    return {(r.job, r.keys[0]): r.state for r in ledger.slices}


def test_downstream_blocks_what_a_failure_feeds_resumes_in_order_and_undoes_three_tables(
    project: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    before = {t: table_rows(spark, project, t) for t in TABLES}
    (project / "fail_on").write_text("2024-01-31")
    code, out, err = dbxdec(
        "backfill", "ds_a", *FOUR_DAYS, "--downstream", "--local", "--max-concurrent", "3",
        "--poll-interval", "0.05", "--param", "label=after",
    )  # fmt: skip
    assert code == 1, out + err

    # A's 2024-01-31 failed: exactly B's 01-31 and 02-01 and C's two months are blocked
    states = _states(project)
    assert {s for s, state in states.items() if state == "failed"} == {("ds_a", "2024-01-31")}
    assert {s for s, state in states.items() if state == "pending"} == BLOCKED
    done = EVERY_SLICE - BLOCKED - {("ds_a", "2024-01-31")}
    assert {s for s, state in states.items() if state == "succeeded"} == done
    log = events(project)
    first_session = len(log)
    assert {(job, key) for what, job, key in log if what == "start"} == EVERY_SLICE - BLOCKED
    assert "6 succeeded, 1 failed, 0 not run, 4 blocked, of 11 runs" in out
    assert "BLOCKED ds_b 2024-02-01 (blocked by ds_a 2024-01-31, which failed)" in out
    assert "BLOCKED ds_c 2024-02-01 (blocked by ds_a 2024-01-31, which failed)" in out
    assert "1 of 11 runs failed, 4 blocked" in err

    # one row in dbxdec backfills, listing the jobs
    code, listing, err = dbxdec("backfills", "--json")
    assert code == 0, err
    (row,) = json.loads(listing)
    assert row["jobs"] == ["ds_a", "ds_b", "ds_c"] and row["runs"] == 11
    assert row["job"] == "ds_a --downstream: ds_b, ds_c"
    # one job's view of it (status, history, --job) holds that job's runs only
    (b_part,) = list_ledgers(project, "ds_b")
    assert [r.keys[0] for r in b_part.slices] == B_KEYS and b_part.job == "ds_b"

    # fixed: --resume runs the failed key, then the keys it blocked, each after its reads
    (project / "fail_on").unlink()
    code, out, err = dbxdec("backfill", "--resume", row["id"], "--poll-interval", "0.05")
    assert code == 0, out + err
    assert set(_states(project).values()) == {"succeeded"}
    log = events(project)
    resumed = {(job, key) for what, job, key in log[first_session:] if what == "start"}
    assert resumed == BLOCKED | {("ds_a", "2024-01-31")}
    for b_key, a_keys in B_READS.items():
        for a_key in a_keys:
            assert _at(log, "end", "ds_a", a_key) < _at(log, "start", "ds_b", b_key)
    for c_key, b_keys in C_READS.items():
        for b_key in b_keys:
            assert _at(log, "end", "ds_b", b_key) < _at(log, "start", "ds_c", c_key)
    # the data followed: B read A's new rows, C read B's new rows
    b_rows = {day: labels for day, _, labels in table_rows(spark, project, B_OUT)}
    assert b_rows["2024-02-01"] == "after@2024-01-31+after@2024-02-01"
    assert b_rows["2024-01-30"] == "after@2024-01-30+before@2024-01-29"
    c_rows = {day: labels for day, _, labels in table_rows(spark, project, C_OUT)}
    assert "after@2024-01-31+after@2024-02-01" in c_rows["2024-02-01"]
    assert "before@2024-02-03" in c_rows["2024-02-01"]  # A's 02-03 was not backfilled

    code, out, err = dbxdec("backfill", "undo", row["id"], "--yes")
    assert code == 0, out + err
    assert all(f"Restored {t}." in out for t in TABLES), out
    assert {t: table_rows(spark, project, t) for t in TABLES} == before
