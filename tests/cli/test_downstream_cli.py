"""``dbxdec backfill A --downstream`` at the command line, without Spark: the dry run's
cross-job plan, the options it refuses (one line, exit 2), and claims per job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.guard.downstream_workspace import job_locks
from databricks_bundle_decorators.launch.ledger.lease import LocalLock
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
)

from ..launch.downstream_project import own_jobs, write_downstream_project

FOUR_DAYS = ("--start", "2024-01-30", "--end", "2024-02-02")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with own_jobs():
        yield write_downstream_project(tmp_path_factory.mktemp("dscli"), "downstream_cli_pipelines")


def dbxdec(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--project", str(root)])
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out, err


def test_the_dry_run_prints_each_run_with_what_it_waits_for_and_the_edges_used(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("backfill", "ds_a", *FOUR_DAYS, "--downstream", "--local", "--dry-run")
    code, out, err = dbxdec(root, capsys, *args)
    assert code == 0, out + err
    assert "Plan for ds_a --downstream: 11 runs" in out
    assert "ds_b │ 2024-02-01 │ ds_a 2024-01-31, ds_a 2024-02-01" in out
    assert "ds_c │ 2024-01-01 │ ds_b 2024-01-30, ds_b 2024-01-31" in out
    keys = " ".join(  # the keys column, its wrapped lines joined
        line.split("│")[4].strip() for line in out.splitlines() if line.count("│") == 5
    )
    assert "daily -> monthly (window overlap, lookback 0)" in keys
    assert "Dry run: nothing was launched." in out
    assert not (root / ".dbxdec" / "backfills").exists() or not any(
        (root / ".dbxdec" / "backfills").iterdir()
    )
    code, out, err = dbxdec(root, capsys, *args, "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["jobs"] == ["ds_a", "ds_b", "ds_c"]
    assert plan["runs"][9] == {
        "index": 9,
        "job": "ds_c",
        "key": "2024-01-01",
        "waits_for": ["ds_b 2024-01-30", "ds_b 2024-01-31"],
    }
    assert [(e["upstream"], e["downstream"]) for e in plan["edges"]] == [
        ("ds_a", "ds_b"),
        ("ds_b", "ds_c"),
    ]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--batch-size", "2"), "--downstream cannot be combined with --batch-size"),
        (("--final-sync",), "--downstream cannot be combined with --final-sync"),
        (("--detach",), "--detach hands the backfill to a controller run in the workspace"),
    ],
)
def test_options_it_does_not_take_are_refused_in_one_line(
    root: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], said: str
) -> None:
    local = () if not extra else ("--local",)
    args = ("backfill", "ds_a", *FOUR_DAYS, "--downstream", *local, *extra, "--dry-run")
    code, _, err = dbxdec(root, capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], err


def test_each_job_is_claimed_and_a_refusal_names_the_job(tmp_path: Path) -> None:
    records = [
        SliceRecord(0, ("2024-01-30",), {}, job="a"),
        SliceRecord(1, ("2024-01-30",), {}, job="b", waits_for=(0,)),
    ]
    ledger = Ledger(
        tmp_path / "l.sqlite",
        backfill_id="a-1",
        job="a",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=records,
    )
    other = Ledger(
        tmp_path / "o.sqlite",
        backfill_id="b-2",
        job="b",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=[SliceRecord(0, ("2024-01-30",), {})],
    )
    with LocalLock(tmp_path, "b").hold(other, lambda message: None):
        both = job_locks(tmp_path, ["a", "b"], force=False)
        with pytest.raises(UsageError, match="job 'b'"), both.hold(ledger, lambda m: None):
            pass  # pragma: no cover - refused
        # the claim on 'a' taken before the refusal was released
        with LocalLock(tmp_path, "a").hold(ledger, lambda message: None):
            pass
    with job_locks(tmp_path, ["a", "b"], force=False).hold(ledger, lambda m: None):
        holder = LocalLock(tmp_path, "b").holder()
        assert holder is not None and holder.keys == ("2024-01-30",)
        assert holder.backfill_id == "a-1"
