"""``dbxdec backfill --canary N --diff-gate PCT`` on real Delta tables: a canary that
halves a key's row count stops the backfill before the rest; canaries within the gate
let it go on, and a canary key with no rows before is reported, not gated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers

from .relchecks_project import backfill, rows_per_key, write_project

pytestmark = [pytest.mark.spark]

PLAIN = "main.rel.plain"
GATE = ("--diff-gate", "10%")


def test_a_canary_that_halves_a_key_stops_the_backfill_and_one_within_the_gate_goes_on(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project(tmp_path / "proj")
    code, out = backfill(
        capsys,
        root,
        "rel_plain",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-03",
        "--batch-size",
        "3",
    )
    assert code == 0, out
    before = rows_per_key(spark, root, PLAIN)
    assert before == {f"2024-01-0{d}": 10 for d in (1, 2, 3)}

    code, out = backfill(
        capsys, root, "rel_plain", "--start", "2024-01-01", "--end", "2024-01-03",
        "--param", "rows=5", "--canary", "1", *GATE,
    )  # fmt: skip
    assert code == 1, out
    assert (
        "canary slice 2024-01-01 failed: diff gate 10%: main.rel.plain key 2024-01-01: "
        "10 -> 5 rows (-50%, versions 0 -> 1); nothing else launched"
    ) in out
    assert rows_per_key(spark, root, PLAIN) == {**before, "2024-01-01": 5}
    stopped = list_ledgers(root, "rel_plain")[0]
    assert [r.state for r in stopped.slices] == ["failed", "pending", "pending"]
    assert len(stopped.slices[0].attempts) == 1  # the gate's failure is not retried

    code, out = backfill(
        capsys, root, "rel_plain", "--start", "2024-01-02", "--end", "2024-01-04",
        "--order", "reverse", "--param", "rows=11", "--canary", "2", *GATE,
    )  # fmt: skip
    assert code == 0, out
    assert (
        "outside the diff gate: main.rel.plain key 2024-01-04: no rows before (version 1), 11 now"
    ) in out
    assert rows_per_key(spark, root, PLAIN) == {
        "2024-01-01": 5, "2024-01-02": 11, "2024-01-03": 11, "2024-01-04": 11,
    }  # fmt: skip
