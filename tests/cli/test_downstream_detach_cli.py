"""``dbxdec backfill A --downstream --detach`` at the command line, new or resumed, against
the Jobs API emulator: the command returns once a controller run is started, and that
run (a real ``dbxdec-controller`` subprocess) drives every job's runs on its own
deployment, each after what it reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
    new_backfill_id,
)
from databricks_bundle_decorators.testing import JobsEmulator

from ..launch.controller_fixtures import controller_job
from ..launch.downstream_project import own_jobs, write_downstream_project
from .test_downstream_cli import dbxdec

KEY = "backfill_key"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with own_jobs():
        yield write_downstream_project(tmp_path_factory.mktemp("dsdetach"), "ds_detach_pipelines")


def _deploy(emu: JobsEmulator) -> tuple[dict[str, int], int]:
    ids = {name: emu.create_job(name) for name in ("ds_a", "ds_b", "ds_c")}
    return ids, controller_job(emu)


def _ended(emu: JobsEmulator, controller: int) -> None:
    emu.wait_for(
        lambda runs: bool(runs) and not any(r.active for r in runs),
        job_id=controller,
        what="the controller run ended",
    )


def _keys(emu: JobsEmulator, job_id: int) -> list[str]:
    return sorted(r.job_parameters[KEY] for r in emu.runs(job_id))


def test_downstream_detach_returns_and_the_controller_runs_every_job(
    root: Path, workspace_env: JobsEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = workspace_env
    ids, controller = _deploy(emu)
    args = ["backfill", "ds_a", "--start", "2024-01-30", "--end", "2024-02-01", "--downstream"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--detach", "--poll-interval", "0.05", "--project", str(root)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, out + err
    assert "detached: controller run" in out and "Follow it with: dbxdec backfill watch" in out
    backfill_id = out.split("Backfill ", 1)[1].split(" ", 1)[0]
    _ended(emu, controller)
    assert _keys(emu, ids["ds_a"]) == ["2024-01-30", "2024-01-31", "2024-02-01"]
    assert _keys(emu, ids["ds_b"]) == ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]
    assert _keys(emu, ids["ds_c"]) == ["2024-01-01", "2024-02-01"]
    ledger = read_journal(emu.workspace_client(), ids["ds_a"], backfill_id)
    assert ledger.state == "succeeded" and ledger.backend.job_ids == ids


def test_resume_detach_of_a_downstream_backfill_hands_what_is_left_to_a_controller(
    root: Path, workspace_env: JobsEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``--downstream`` backfill launched from this machine, left unfinished (A's key
    ran, B's did not), goes on in a controller run: B's key only, on B's deployment."""
    from databricks_bundle_decorators.launch.ledger.ledger import Attempt

    emu = workspace_env
    ids, controller = _deploy(emu)
    backfill_id = new_backfill_id("ds_a")
    done = Attempt(1, "t-a", "succeeded", run_id="1", submitted_at=1.0)
    spec = BackendSpec("databricks", job_id=ids["ds_a"], remote_name="ds_a", host=emu.url)
    Ledger(
        ledger_dir(root) / f"{backfill_id}.sqlite",
        backfill_id=backfill_id,
        job="ds_a",
        backend=spec,  # no job_ids: a ledger written before --detach took --downstream
        options=LaunchOptions(),
        slices=[
            SliceRecord(0, ("2024-01-30",), {KEY: "2024-01-30"}, (done,), job="ds_a"),
            SliceRecord(1, ("2024-01-30",), {KEY: "2024-01-30"}, job="ds_b", waits_for=(0,)),
        ],
    ).save()
    with pytest.raises(SystemExit) as exit_info:
        main(["backfill", "--resume", backfill_id, "--detach", "--project", str(root)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, out + err
    assert f"Backfill {backfill_id} detached" in out
    _ended(emu, controller)
    assert _keys(emu, ids["ds_a"]) == []  # done before: not run again
    assert _keys(emu, ids["ds_b"]) == ["2024-01-30"]
    ledger = read_journal(emu.workspace_client(), ids["ds_a"], backfill_id)
    assert ledger.state == "succeeded"
    assert ledger.backend.job_ids == {job: ids[job] for job in ("ds_a", "ds_b")}  # its jobs


def test_a_detached_downstream_backfill_is_one_row_watched_with_its_blocked_keys(
    root: Path, workspace_env: JobsEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """``backfills --workspace`` lists it once with its jobs, ``backfill watch`` counts
    the keys blocked behind A's failed key, and ``status B --backfill ID`` shows B's part
    (its journal is under A's deployment: B has none of its own)."""
    emu = workspace_env
    ids, controller = _deploy(emu)
    emu.set_outcome("2024-01-31", job_id=ids["ds_a"], fail_attempts=99)
    args = ("backfill", "ds_a", "--start", "2024-01-30", "--end", "2024-02-01", "--downstream")
    code, out, err = dbxdec(root, capsys, *args, "--detach", "--poll-interval", "0.05")
    assert code == 0, out + err
    backfill_id = out.split("Backfill ", 1)[1].split(" ", 1)[0]
    _ended(emu, controller)

    code, out, err = dbxdec(root, capsys, "backfills", "--workspace", "--json")
    assert code == 0, err
    [row] = [r for r in json.loads(out) if r["id"] == backfill_id]
    assert row["job"] == "ds_a --downstream: ds_b, ds_c"
    assert row["jobs"] == ["ds_a", "ds_b", "ds_c"] and row["where"] == "workspace"

    code, out, err = dbxdec(root, capsys, "backfill", "watch", backfill_id)
    assert code == 1  # it ended failed
    # A's 01-31 failed: B's 01-31 and 02-01, C's January and February wait behind it
    assert "1 failed, 0 cancelled, 4 pending (4 blocked) of 9 runs" in out, out + err

    code, out, err = dbxdec(root, capsys, "status", "ds_b", "--backfill", backfill_id, "--json")
    assert code == 0, out + err
    document = json.loads(out)
    assert document["job"] == "ds_b"
    assert document["counts"]["succeeded"] == 2 and document["counts"]["pending"] == 2
