"""The diff gate's rules without Spark: the percentage option, which versions a run's
keys are compared at, the verdict, and the refusals of ``--diff-gate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.backends.diff_gate import (
    checked_diff_gate,
    gate_verdict,
    parse_diff_gate,
)
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.plan.request import BackfillRequest
from databricks_bundle_decorators.runtime.job_tables.key_changes import KeyChange, change_versions
from databricks_bundle_decorators.runtime.storage.delta_history import Commit

from .relchecks_project import dbxdec, write_project


@pytest.mark.parametrize(("text", "pct"), [("10%", 10.0), ("2.5", 2.5), (" 0% ", 0.0)])
def test_a_percentage_is_read(text: str, pct: float) -> None:
    assert parse_diff_gate(text) == pct


@pytest.mark.parametrize("text", ["ten", "-5%", "10%%", ""])
def test_a_bad_percentage_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a percentage, e\.g\. 10%"):
        parse_diff_gate(text)


def w(version: int, metadata: str | None) -> Commit:
    return Commit(version, "WRITE", metadata)


def test_a_run_is_compared_with_the_table_before_the_backfill_s_first_commit() -> None:
    history = [
        w(0, "dbxdec:j:t:1"),
        w(1, "dbxdec:j:t:2:backfill=b"),  # the backfill's first canary run (stopped)
        w(2, "dbxdec:other:t:7"),
        w(3, "dbxdec:j:t:3:backfill=b"),  # its rerun, on --resume
    ]
    assert change_versions(history, "2", "b") == (0, 1)
    assert change_versions(history, "3", "b") == (0, 3)
    assert change_versions(history, "4", "b") is None  # the run did not commit here
    assert change_versions([w(0, "dbxdec:j:t:2:backfill=b")], "2", "b") == (None, 0)


def test_a_key_moved_beyond_the_gate_stops_and_a_new_key_is_only_reported() -> None:
    within = KeyChange("t", "2024-01-02", 100, 110, 3, 4)
    halved = KeyChange("t", "2024-01-01", 100, 50, 3, 4)
    new = KeyChange("t", "2024-01-03", None, 70, 3, 4)
    stop, notes = gate_verdict([within, new], 10.0)
    assert stop is None
    assert notes == ["outside the diff gate: t key 2024-01-03: no rows before (version 3), 70 now"]
    stop, _ = gate_verdict([halved, within, KeyChange("t", "x", 10, 30, 3, 4)], 10.0)
    assert (
        stop
        == "diff gate 10%: t key 2024-01-01: 100 -> 50 rows (-50%, versions 3 -> 4) (and 1 more)"
    )


def test_the_gate_needs_canaries_locally_and_on_databricks() -> None:
    for local in (True, False):
        with pytest.raises(Exception, match="--diff-gate needs --canary N"):
            checked_diff_gate(
                BackfillRequest("j", options=LaunchOptions(diff_gate=10.0)), local=local
            )
    # on Databricks a run of the job measures the canaries (see test_diff_gate_aggregates)
    gated = BackfillRequest("j", options=LaunchOptions(canary=1, diff_gate=10.0))
    assert checked_diff_gate(gated, local=False) == 10.0
    assert checked_diff_gate(gated, local=True) == 10.0


def test_a_bad_gate_is_one_line_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project(tmp_path / "proj")
    code, out = dbxdec(
        capsys, root, "backfill", "rel_plain", "--canary", "1", "--diff-gate", "lots"
    )
    assert code == 2
    assert "Invalid value for '--diff-gate': 'lots' is not a percentage, e.g. 10%" in out
    code, out = dbxdec(
        capsys,
        root,
        "backfill",
        "rel_plain",
        "--keys",
        "2024-01-01",
        "--diff-gate",
        "5%",
        "--local",
    )
    assert code == 2
    assert "--diff-gate needs --canary N: the gate measures the canary runs" in out
    assert "Traceback" not in out
