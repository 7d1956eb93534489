"""``dbxdec backfill undo`` of a Databricks backfill finds its commits by the backfill's
id (against the Jobs API emulator): every slice run's order carries it, and the undo
run's order names the backfill, not its runs, so it does not grow with them."""

from __future__ import annotations

from pathlib import Path

import pytest
from databricks.sdk.service.jobs import JobParameterDefinition, JobSettings

from databricks_bundle_decorators.backfill.wire import UndoOrder, decode_order, order_in, task_order
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.undo_project import write_undo_project

from .clirun import assert_one_error_line, run
from .test_undo_cli import FAST, UNDO_JOB_PARAMS

JOB_PARAMS = UNDO_JOB_PARAMS
OLDER_PARAMS = {k: v for k, v in UNDO_JOB_PARAMS.items() if k != "dbxdec_order"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_undo_project(tmp_path / "proj")


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return run([*args, "--project", str(root)], capsys)


def backfill(
    capsys: pytest.CaptureFixture[str], root: Path, start: str, end: str
) -> tuple[str, str]:
    """A backfill of ``undo_orders`` on the emulator: its id and what it printed."""
    before = {ledger.id for ledger in list_ledgers(root, "undo_orders")}
    code, out, err = dbxdec(
        capsys, root, "backfill", "undo_orders", "--start", start, "--end", end, *FAST
    )
    assert code == 0, out + err
    (new,) = [ledger.id for ledger in list_ledgers(root, "undo_orders") if ledger.id not in before]
    return new, out + err


def undo_order(capsys: pytest.CaptureFixture[str], root: Path, emu: JobsEmulator, bid: str) -> str:
    """Undo backfill ``bid``; the ``dbxdec_order`` its undo run was sent."""
    code, out, err = dbxdec(capsys, root, "backfill", "undo", bid, "--yes", *FAST)
    assert code == 0, out + err
    return emu.run_now_bodies()[-1]["job_parameters"]["dbxdec_order"]


def test_the_undo_order_names_the_backfill_and_does_not_grow_with_its_runs(
    root: Path, capsys: pytest.CaptureFixture[str], workspace_env: JobsEmulator
) -> None:
    emu = workspace_env
    job_id = emu.create_job("undo_orders", parameters=JOB_PARAMS, max_concurrent_runs=10)
    small, _ = backfill(capsys, root, "2024-01-02", "2024-01-04")  # 3 runs
    big, _ = backfill(capsys, root, "2024-02-01", "2024-03-21")  # 50 runs
    runs = emu.runs(job_id)
    assert len(runs) == 53
    # every slice run was sent its backfill's id
    assert [task_order(r.job_parameters).backfill_id for r in runs] == [small] * 3 + [big] * 50

    small_order = undo_order(capsys, root, emu, small)
    big_order = undo_order(capsys, root, emu, big)
    assert decode_order(small_order) == UndoOrder(small)
    assert decode_order(big_order) == UndoOrder(big)
    assert len(big_order) == len(small_order)  # 50 runs vs 3: the same length
    # the undo runs themselves belong to no backfill
    assert [type(order_in(r.job_parameters)) for r in emu.runs(job_id)[53:]] == [UndoOrder] * 2


def test_a_job_redeployed_without_the_order_parameter_is_refused_in_one_line(
    root: Path, capsys: pytest.CaptureFixture[str], workspace_env: JobsEmulator
) -> None:
    emu = workspace_env
    job_id = emu.create_job("undo_orders", parameters=JOB_PARAMS, max_concurrent_runs=5)
    bid, _ = backfill(capsys, root, "2024-01-02", "2024-01-04")
    # deployed again by an older dbxdec: its runs could not read an order by backfill id
    older = [JobParameterDefinition(name=k, default=v) for k, v in OLDER_PARAMS.items()]
    emu.workspace_client().jobs.reset(
        job_id, JobSettings(name="undo_orders", max_concurrent_runs=5, parameters=older)
    )
    code, out, err = dbxdec(capsys, root, "backfill", "undo", bid, "--yes", *FAST)
    assert code == 2, out + err
    assert assert_one_error_line(err) == (
        f"Error: job 'undo_orders' (id {job_id}) was deployed without the dbxdec_order "
        "parameter (by an older dbxdec): deploy it again (dbxdec deploy) to undo; nothing "
        "was restored"
    )
    assert len(emu.runs(job_id)) == 3  # no undo run


def test_a_job_deployed_without_the_order_parameter_sends_none_and_its_undo_names_the_runs(
    root: Path, capsys: pytest.CaptureFixture[str], workspace_env: JobsEmulator
) -> None:
    emu = workspace_env
    job_id = emu.create_job("undo_orders", parameters=OLDER_PARAMS, max_concurrent_runs=5)
    bid, printed = backfill(capsys, root, "2024-01-02", "2024-01-04")
    assert (
        f"job 'undo_orders' (id {job_id}) was deployed without the dbxdec_order parameter (by "
        "an older dbxdec): its runs are not sent the backfill's id, so its undo names every "
        "run; deploy it again (dbxdec deploy)"
    ) in printed
    assert all("dbxdec_order" not in body["job_parameters"] for body in emu.run_now_bodies())
    # deployed again, by this dbxdec: the undo run can be sent its order
    current = [JobParameterDefinition(name=k, default=v) for k, v in JOB_PARAMS.items()]
    emu.workspace_client().jobs.reset(
        job_id, JobSettings(name="undo_orders", max_concurrent_runs=5, parameters=current)
    )
    code, out, err = dbxdec(capsys, root, "backfill", "undo", bid, "--dry-run")
    assert code == 0, out + err
    assert (
        "note: this backfill's runs were not sent its id (its ledger predates it, or the job "
        "was deployed without dbxdec_order): its commits are found by the ids of its 3 runs"
    ) in out
    run_ids = tuple(sorted(str(r.run_id) for r in emu.runs(job_id)))
    assert decode_order(undo_order(capsys, root, emu, bid)) == UndoOrder(bid, run_ids)
