"""``dbxdec restate`` on real local Delta: the provenance chain (source ``main.raw.events``
-> pv_a -> pv_b (lookback 1) -> pv_c (monthly)) run over 2024-01-01..2024-01-10 from the
source's version 0, then a source commit touching 2024-01-05 and 2024-01-07 (version 1)
and pv_a rerun for those two days only, so that their provenance cites version 1.

One module-scoped project (the suite pays for one chain); the dry runs and bad inputs
first, then the restatement of what read version 1 runs in dependency order while a
reader polls the three tables, and ``undo`` restores them. The long scenario runs in
``make soak`` (marked ``soak``; ``pytest --soak`` runs it): a copy of the starting project
is restated by a launcher in a subprocess, killed (SIGKILL) while a pv_b run is held at a
FIFO gate, checked key by key (each key's record is there exactly with its rows) and
resumed, to the rows of an uninterrupted restatement of another copy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import Ledger, list_ledgers
from tests.cli.clirun import Cli

from .chain_project import (
    A_OUT,
    B_OUT,
    C_OUT,
    PIPELINES,
    SOURCE,
    own_jobs,
    table_rows,
    write_chain_project,
    write_events,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MODULE = "pv_restate_pipelines"
TABLES = (A_OUT, B_OUT, C_OUT)
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]
EXPECTED = {
    "pv_a": ["2024-01-05", "2024-01-07"],
    "pv_b": ["2024-01-05", "2024-01-06", "2024-01-07", "2024-01-08"],
    "pv_c": ["2024-01-01"],
}
WAITS = {  # each run of the restatement: the restated keys it reads
    "pv_a 2024-01-05": [],
    "pv_a 2024-01-07": [],
    "pv_b 2024-01-05": ["pv_a 2024-01-05"],
    "pv_b 2024-01-06": ["pv_a 2024-01-05"],
    "pv_b 2024-01-07": ["pv_a 2024-01-07"],
    "pv_b 2024-01-08": ["pv_a 2024-01-07"],
    "pv_c 2024-01-01": [f"pv_b 2024-01-0{d}" for d in (5, 6, 7, 8)],
}
GATE_ENV = "PV_RESTATE_GATE"
# pv_b's body waits at a FIFO gate when the environment names one: opening ``.reached``
# for writing blocks until the test opens it for reading, then ``.hold`` (never written)
# holds the run until the launcher is killed
GATE = """

def _gate():
    import os

    gate = os.environ.get("PV_RESTATE_GATE")
    if gate:
        with open(gate + ".reached", "w") as reached:
            reached.write("pv_b")
        with open(gate + ".hold") as hold:
            hold.read()
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Iterator[Path]:
    """The chain after pv_a's rerun of 2024-01-05 and 2024-01-07 from the source's version 1
    (a copy of it beside, ``<root>-copy``, for the killed restatement)."""
    with own_jobs():
        root = write_chain_project(tmp_path_factory.mktemp("restate") / "proj", MODULE)
        pipelines = PIPELINES.replace(
            '        suffix = "b1"\n', '        _gate()\n        suffix = "b1"\n'
        )
        (root / f"{MODULE}.py").write_text(pipelines + GATE)
        write_events(spark, root, [(d, f"v{d[-2:]}") for d in DAYS], days=DAYS)
        runs = [
            ("pv_a", DAYS[0], DAYS[-1]),
            ("pv_b", DAYS[0], DAYS[-1]),
            ("pv_c", DAYS[0], DAYS[0]),
        ]
        changed = ["2024-01-05", "2024-01-07"]
        for step, (job, start, end) in enumerate([*runs, *(("pv_a", d, d) for d in changed)]):
            if step == len(runs):  # version 1 of the source: two days changed
                write_events(spark, root, [(d, f"x{d[-2:]}") for d in changed], days=changed)
            with pytest.raises(SystemExit) as done:
                main(["run", job, "--local", "--start", start, "--end", end,
                      "--project", str(root)])  # fmt: skip
            assert done.value.code == 0
        shutil.copytree(root, root.parent / "proj-copy")  # for the killed restatement
        shutil.copytree(root, root.parent / "proj-uncut")  # for its uninterrupted twin
        yield root


def _keys(out: str) -> dict[str, dict[str, str]]:
    """The dry run's ``--json`` keys: job -> key -> reasons (joined)."""
    document = json.loads(out)
    return {
        job: {item["key"]: "; ".join(item["reasons"]) for item in items}
        for job, items in document["jobs"].items()
    }


def test_dry_run_of_a_source_version_lists_what_read_it_and_its_dependants(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    code, out, err = dbxdec(
        "restate", "--source", SOURCE, "--versions", "1-1", "--dry-run", "--json"
    )
    assert code == 0, out + err
    keys = _keys(out)
    assert {job: list(k) for job, k in keys.items()} == EXPECTED
    assert keys["pv_a"]["2024-01-05"] == f"read {SOURCE} at version 1"
    assert keys["pv_b"]["2024-01-06"] == f"reads {A_OUT} 2024-01-05 (restated)"
    assert keys["pv_b"]["2024-01-08"] == f"reads {A_OUT} 2024-01-07 (restated)"
    assert keys["pv_c"]["2024-01-01"].startswith(f"reads {B_OUT} 2024-01-05, 2024-01-06")
    plan = json.loads(out)["plan"]
    assert plan["dry_run"] and len(plan["runs"]) == 7 and not list_ledgers(project)

    code, out, err = dbxdec("restate", "--source", SOURCE, "--versions", "1", "--dry-run")
    assert code == 0, out + err
    assert (
        "pv_b (4 keys):" in out and "2024-01-07  reads main.pv.a_out 2024-01-07 (restated)" in out
    )
    assert "Dry run: nothing was launched." in out


def test_dry_run_of_a_table_range_and_bad_inputs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    range_ = ("--start", "2024-01-03", "--end", "2024-01-04")
    code, out, err = dbxdec("restate", A_OUT, *range_, "--dry-run", "--json")
    assert code == 0, out + err
    keys = _keys(out)
    assert {job: len(k) for job, k in keys.items()} == {"pv_a": 2, "pv_b": 3, "pv_c": 1}
    assert keys["pv_a"]["2024-01-03"] == f"in 2024-01-03..2024-01-04 of {A_OUT}"

    code, out, err = dbxdec("restate", "--source", SOURCE, "--versions", "7-9")
    assert (code, out.strip()) == (0, f"no key of the project read {SOURCE} at versions 7..9: "
                                      "nothing to restate")  # fmt: skip
    bad = [
        ("main.pv.nope", *range_),
        ("--source", "main.raw.nope", "--versions", "1"),
        ("--source", SOURCE, "--versions", "1-x"),
        ("--source", SOURCE, "--versions", "3-1"),
        (A_OUT, "--source", SOURCE, "--versions", "1"),
        (A_OUT,),
        (SOURCE, *range_),
    ]
    for args in bad:
        code, out, err = dbxdec("restate", *args, "--dry-run")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and not out, (args, out, err)
    assert not list_ledgers(project)


def _start_killed_restate(root: Path, gate: Path, log: Path) -> subprocess.Popen[str]:
    os.mkfifo(f"{gate}.reached")
    os.mkfifo(f"{gate}.hold")
    env = {**os.environ, GATE_ENV: str(gate)}
    code = "from databricks_bundle_decorators.cli.main import main; main()"
    command = [sys.executable, "-c", code, "restate", "--source", SOURCE, "--versions", "1-1",
               "--local", "--json", "--poll-interval", "0.02", "--project", str(root)]  # fmt: skip
    with log.open("w") as sink:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)


def _wait_at_gate(proc: subprocess.Popen[str], gate: Path, log: Path) -> None:
    """Block until a pv_b run of ``proc`` is at the gate (or fail if ``proc`` ends)."""
    reached = threading.Event()

    def open_gate() -> None:
        with open(f"{gate}.reached") as fifo:
            fifo.read()
        reached.set()

    opener = threading.Thread(target=open_gate, daemon=True)
    opener.start()
    while not reached.wait(0.5):  # a liveness check, not a sync: the event is the sync
        if proc.poll() is not None:
            os.close(os.open(f"{gate}.reached", os.O_WRONLY | os.O_NONBLOCK))  # free the opener
            pytest.fail(f"the restatement ended before pv_b's gate: {log.read_text()}")


class Reader:
    """A thread reading the three tables every 100 ms: each restated key's rows counted."""

    def __init__(self, spark: Any, root: Path) -> None:
        from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

        warehouse = root / ".dbxdec" / "warehouse"
        self.spark = spark
        self.paths = {t: str(local_table_path(t, warehouse)) for t in TABLES}
        self.wanted = dict(zip(TABLES, EXPECTED.values(), strict=True))
        self.polls = 0
        self.absent: list[tuple[str, str]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        from pyspark.sql import functions as F

        while not self.stop.is_set():
            frames = [  # the restated keys' partitions only (pruned: a light query)
                self.spark.read.format("delta")
                .load(path)
                .where(F.col("day").isin(self.wanted[table]))
                .select(F.lit(table).alias("t"), "day")
                for table, path in self.paths.items()
            ]
            union = frames[0].unionByName(frames[1]).unionByName(frames[2])
            counts = {(r.t, r.day): r[2] for r in union.groupBy("t", "day").count().collect()}
            for table, keys in self.wanted.items():
                self.absent += [(table, k) for k in keys if not counts.get((table, k))]
            self.polls += 1
            self.stop.wait(0.1)

    def __enter__(self) -> Reader:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _record_with_its_rows(
    spark: Any,
    root: Path,
    cut: Ledger,
    states: dict[tuple[str | None, str], str],
    before: dict[str, list[tuple[Any, ...]]],
    restated: dict[str, list[tuple[Any, ...]]],
) -> None:
    """After the kill, every restated key of ``root`` holds the restatement's rows and
    a record of ``cut``'s backfill exactly when its run succeeded, else the rows and the
    record from before."""
    from databricks_bundle_decorators.launch.ledger.place import LocalPlace
    from databricks_bundle_decorators.launch.provenance.index import PROVENANCE_FOLDER, read_index
    from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

    warehouse = root / ".dbxdec" / "warehouse"
    place = LocalPlace(root / PROVENANCE_FOLDER)
    now = {t: table_rows(spark, root, t) for t in TABLES}
    for table, (job, keys) in zip(TABLES, EXPECTED.items(), strict=True):
        index = read_index(place, table, local_table_path(table, warehouse))
        for key in keys:
            record = index.record(key)
            assert record is not None, (table, key)
            done = states[(job, key)] == "succeeded"
            assert (record.backfill_id == cut.id) is done, (table, key, states[(job, key)])
            rows = [r for r in now[table] if r[0] == key]
            assert rows == [r for r in (restated if done else before)[table] if r[0] == key]
    assert "succeeded" in states.values() and set(states.values()) != {"succeeded"}


def _in_order(ledger: Ledger) -> list[str]:
    """Slices that started before a slice they wait for ended (from the attempts' times)."""
    wrong = []
    for record in ledger.slices:
        attempt = record.last
        assert attempt is not None
        started = attempt.started_at or attempt.submitted_at
        for index in record.waits_for:
            upstream = ledger.slices[index].last
            assert upstream is not None and upstream.ended_at is not None and started is not None
            if started < upstream.ended_at:
                wrong.append(f"{record.label} started before {ledger.slices[index].label} ended")
    return wrong


def test_restate_runs_in_order_with_keys_always_readable_and_undoes(
    project: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    before = {t: table_rows(spark, project, t) for t in TABLES}
    # the restatement, a reader polling the three tables throughout
    with Reader(spark, project) as reader:
        code, out, err = dbxdec(
            "restate", "--source", SOURCE, "--versions", "1-1", "--local",
            "--because", "source v1 fixed days 5 and 7", "--poll-interval", "0.02",
        )  # fmt: skip
    assert code == 0, out + err
    assert reader.polls > 0 and reader.absent == []
    (ledger,) = list_ledgers(project)
    assert ledger.because == "source v1 fixed days 5 and 7"
    ran = {job: [r.keys[0] for r in ledger.slices if r.job == job] for job in EXPECTED}
    assert ran == EXPECTED
    assert all(r.state == "succeeded" and len(r.attempts) == 1 for r in ledger.slices)
    waits = {r.label: [ledger.slices[w].label for w in r.waits_for] for r in ledger.slices}
    assert waits == WAITS
    assert _in_order(ledger) == []
    restated = {t: table_rows(spark, project, t) for t in TABLES}
    assert restated[B_OUT] != before[B_OUT] and restated[C_OUT] != before[C_OUT]
    a_rows = {day: labels for day, _, labels in restated[A_OUT]}
    assert (a_rows["2024-01-05"], a_rows["2024-01-06"]) == ("x05", "v06")
    code, listing, err = dbxdec("backfills", "--json")
    assert json.loads(listing)[0]["because"] == "source v1 fixed days 5 and 7"

    code, out, err = dbxdec("backfill", "undo", ledger.id, "--yes")
    assert code == 0, out + err
    assert {t: table_rows(spark, project, t) for t in TABLES} == before


@pytest.mark.soak  # a second JVM and two more restatements: make soak runs it
def test_a_killed_restatement_resumes_to_the_uninterrupted_tables(
    project: Path, spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    copy, uncut = project.parent / "proj-copy", project.parent / "proj-uncut"
    before = {t: table_rows(spark, copy, t) for t in TABLES}
    gate, log = tmp_path / "gate", tmp_path / "killed.log"
    killed = _start_killed_restate(copy, gate, log)  # its Spark starts while this one runs
    try:
        code, out, err = Cli(uncut, capsys)(
            "restate", "--source", SOURCE, "--versions", "1-1", "--local",
            "--poll-interval", "0.02",
        )  # fmt: skip
        assert code == 0, out + err
        restated = {t: table_rows(spark, uncut, t) for t in TABLES}
        # the copy's restatement, killed while a pv_b run is held at the gate
        _wait_at_gate(killed, gate, log)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    (cut,) = list_ledgers(copy)
    states = {(r.job, r.keys[0]): r.state for r in cut.slices}
    assert states[("pv_a", "2024-01-05")] == states[("pv_a", "2024-01-07")] == "succeeded"
    assert states[("pv_c", "2024-01-01")] == "pending", log.read_text()
    # the crash trial: each key's provenance is its data's, committed together or not at
    # all (the run killed at the gate committed neither its rows nor its record)
    _record_with_its_rows(spark, copy, cut, states, before, restated)
    # the run held at the gate died with its launcher: the resume runs its key again
    resume = ("--resume", cut.id, "--local", "--poll-interval", "0.02")
    code, out, err = Cli(copy, capsys)("backfill", *resume)
    assert code == 0, out + err
    assert {t: table_rows(spark, copy, t) for t in TABLES} == restated
    assert {r.state for r in list_ledgers(copy)[0].slices} == {"succeeded"}
