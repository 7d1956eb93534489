"""Issue 40 item 5: a backfill of a job whose upstream jobs (the table graph) have no data
for keys its windows read is refused before anything launches: one line per upstream job
with the missing keys and the command that fills them; ``--allow-missing-upstream`` goes
on. On real local Delta: ``ds_b`` (daily, lookback 1) reads ``ds_a``'s table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..launch.downstream_project import own_jobs, write_downstream_project
from .clirun import FAST, Cli

pytestmark = pytest.mark.spark


@pytest.fixture
def root(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    module = f"upstream_cover_{len(request.node.name)}_{request.node.name[5:25]}"  # per test
    with own_jobs():
        yield write_downstream_project(tmp_path, module)


def test_a_backfill_over_missing_upstream_keys_is_refused_with_the_fill_command(
    spark: Any, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(root, capsys)
    b_days = ("--start", "2024-01-03", "--end", "2024-01-05", "--local")

    # ds_a never ran: it has no data for any key ds_b's windows read (lookback 1: from 01-02)
    code, out, err = dbxdec("backfill", "ds_b", *b_days, "--dry-run")
    assert code == 2, out + err
    assert "job 'ds_b' reads tables its upstream jobs have no data for" in err
    assert (
        "ds_a: 4 of 4 keys have no data (2024-01-02, 2024-01-03, 2024-01-04, 2024-01-05): "
        "dbxdec backfill ds_a --start 2024-01-02 --end 2024-01-05"
    ) in err
    assert "--allow-missing-upstream" in err
    assert "Traceback" not in err

    # ds_a has three of the four days: the one missing is named
    code, out, err = dbxdec(
        "backfill", "ds_a", "--keys", "2024-01-02,2024-01-03,2024-01-05", "--local", *FAST
    )
    assert code == 0, out + err
    code, out, err = dbxdec("backfill", "ds_b", *b_days, *FAST)
    assert code == 2, out + err
    line = next(x for x in err.splitlines() if x.strip().startswith("ds_a:"))
    assert line.strip().startswith(
        "ds_a: 1 of 4 keys have no data (2024-01-04): "
        "dbxdec backfill ds_a --start 2024-01-04 --end 2024-01-04"
    )
    assert line.endswith("--local --downstream"), line
    assert not any((root / ".dbxdec" / "backfills").glob("ds_b-*")), "nothing launched"

    # --allow-missing-upstream goes on
    code, out, err = dbxdec("backfill", "ds_b", *b_days, "--allow-missing-upstream", "--dry-run")
    assert code == 0, out + err
    assert "Plan for ds_b: 3 runs" in out


def test_a_job_that_reads_no_source_traces_no_other_job(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check costs a job without sources nothing: no other job's body is traced (a
    project of 500 jobs must not trace 500 bodies for one backfill)."""
    from databricks_bundle_decorators.definitions.registry import default_registry

    code, out, err = Cli(root, capsys)(
        "backfill", "ds_a", "--start", "2024-01-03", "--end", "2024-01-04", "--local", "--dry-run"
    )
    assert code == 0, out + err
    assert default_registry.get("ds_a").is_traced
    assert not default_registry.get("ds_b").is_traced
    assert not default_registry.get("ds_c").is_traced
