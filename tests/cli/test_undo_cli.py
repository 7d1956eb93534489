"""``dbxdec backfill undo`` without Spark: unknown ids, Databricks backfills undone by a
run of the job (against the Jobs API emulator), help, and the launcher forms that must
keep working beside the subcommand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from databricks.sdk.service.jobs import JobParameterDefinition, JobSettings

from databricks_bundle_decorators.backfill.wire import UndoOrder, decode_order
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.undo_project import write_undo_project

from .clirun import assert_one_error_line, run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_undo_project(tmp_path / "proj")


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return run([*args, "--project", str(root)], capsys)


@pytest.mark.parametrize(
    ("backfill_id", "message"),
    [
        pytest.param(
            "undo_orders-20240101T000000-dead",
            "Error: no backfill 'undo_orders-20240101T000000-dead' here",
            id="unknown",
        ),
        pytest.param("../../etc/passwd", "is not a backfill id", id="malformed"),
    ],
)
def test_an_unknown_backfill_id_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], backfill_id: str, message: str
) -> None:
    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes")
    assert code == 2, out + err
    assert message in assert_one_error_line(err)
    assert out == ""


UNDO_JOB_PARAMS = {
    "label": "first",
    "backfill_key": "",
    "backfill_start_key": "",
    "backfill_exact": "false",
    "backfill_run_time": "{{job.trigger.time.timestamp_ms}}",
    "dbxdec_order": "",
}
FAST = ("--poll-interval", "0.01")


@pytest.fixture
def workspace(workspace_env: JobsEmulator) -> JobsEmulator:
    """The emulator as the workspace of the environment (no ~/.databrickscfg)."""
    return workspace_env


def databricks_backfill(
    capsys: pytest.CaptureFixture[str], root: Path, emu: JobsEmulator, job_id: int
) -> tuple[str, list[str]]:
    """A 3-day backfill of ``undo_orders`` on the emulator: its id and run ids."""
    code, out, err = dbxdec(
        capsys,
        root,
        "backfill",
        "undo_orders",
        "--start",
        "2024-01-02",
        "--end",
        "2024-01-04",
        *FAST,
    )
    assert code == 0, out + err
    (ledger,) = list_ledgers(root, "undo_orders")
    return ledger.id, sorted(str(r.run_id) for r in emu.runs(job_id))


def test_a_databricks_backfill_is_undone_by_a_run_of_the_job(
    root: Path, capsys: pytest.CaptureFixture[str], workspace: JobsEmulator
) -> None:
    # the backfill ran on a deployment without dbxdec_order (its runs were not sent the
    # backfill's id), the undo on the current one: the undo order names the runs
    old = {k: v for k, v in UNDO_JOB_PARAMS.items() if k != "dbxdec_order"}
    job_id = workspace.create_job("undo_orders", parameters=old, max_concurrent_runs=5)
    backfill_id, run_ids = databricks_backfill(capsys, root, workspace, job_id)
    current = [JobParameterDefinition(name=k, default=v) for k, v in UNDO_JOB_PARAMS.items()]
    workspace.workspace_client().jobs.reset(
        job_id, JobSettings(name="undo_orders", max_concurrent_runs=5, parameters=current)
    )
    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--dry-run")
    assert code == 0, out + err
    assert "a run of job 'undo_orders' (id " in out
    assert "    main.undo.orders (task write_orders)" in out
    assert "Dry run: nothing was restored." in out
    assert len(workspace.runs(job_id)) == 3  # nothing triggered

    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes", *FAST)
    assert code == 0, out + err
    undo_run = workspace.runs(job_id)[-1]
    sent = decode_order(undo_run.job_parameters["dbxdec_order"])
    assert sent == UndoOrder(backfill_id, tuple(run_ids))
    assert undo_run.job_parameters["backfill_key"] == ""  # an undo run processes no key
    assert f"Undo run {undo_run.run_id} succeeded" in out

    code, out, err = dbxdec(
        capsys, root, "backfill", "undo", backfill_id, "--yes", "--force", *FAST
    )
    assert code == 0, out + err
    forced = decode_order(workspace.runs(job_id)[-1].job_parameters["dbxdec_order"])
    assert forced == UndoOrder(backfill_id, tuple(run_ids), force=True)


def test_a_failed_undo_run_is_one_line_and_exit_1(
    root: Path, capsys: pytest.CaptureFixture[str], workspace: JobsEmulator
) -> None:
    job_id = workspace.create_job("undo_orders", parameters=UNDO_JOB_PARAMS, max_concurrent_runs=5)
    backfill_id, _ = databricks_backfill(capsys, root, workspace, job_id)
    workspace.set_outcome("", result="FAILED", message="Task write_orders failed")
    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes", *FAST)
    assert code == 1, out + err
    run_id = workspace.runs(job_id)[-1].run_id
    line = assert_one_error_line(err)
    assert line.startswith(
        f"Error: the undo run {run_id} of job 'undo_orders' failed: FAILED: Task write_orders "
        "failed; each task's output names what it restored or refused ("
    ), line


def test_a_job_deployed_without_the_undo_parameter_is_refused(
    root: Path, capsys: pytest.CaptureFixture[str], workspace: JobsEmulator
) -> None:
    old = {k: v for k, v in UNDO_JOB_PARAMS.items() if k != "dbxdec_order"}
    job_id = workspace.create_job("undo_orders", parameters=old, max_concurrent_runs=5)
    backfill_id, _ = databricks_backfill(capsys, root, workspace, job_id)
    code, out, err = dbxdec(capsys, root, "backfill", "undo", backfill_id, "--yes", *FAST)
    assert code == 2, out + err
    assert assert_one_error_line(err) == (
        f"Error: job 'undo_orders' (id {job_id}) was deployed without the dbxdec_order "
        "parameter (by an older dbxdec): deploy it again (dbxdec deploy) to undo; nothing "
        "was restored"
    )
    assert len(workspace.runs(job_id)) == 3


def test_backfill_help_shows_the_launcher_and_undo(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["backfill", "--help"], capsys)
    assert code == 0
    assert "Usage: dbxdec backfill [OPTIONS] [JOB]" in out
    assert "--resume ID" in out and "--max-concurrent" in out
    # the subcommands, sorted (cancel, cost, pause, undo, unpause, watch), aligned on the longest
    assert re.search(r"Commands:\n  cancel +Cancel detached backfill ID", out)
    assert re.search(r"\n  cost +What backfill ID cost", out)
    assert re.search(r"\n  undo +Restore every Delta table backfill ID wrote", out)
    code, out, _ = run(["backfill", "undo", "--help"], capsys)
    assert code == 0
    assert "Usage: dbxdec backfill undo [OPTIONS] ID" in out
    assert all(option in out for option in ("--yes", "--force", "--dry-run", "--project"))


def test_the_launcher_forms_still_work_beside_undo(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys, root, "backfill", "undo_orders", "--keys", "2024-01-02", "--local", "--dry-run"
    )
    assert code == 0, out + err
    assert "Dry run: nothing was launched." in out
    code, out, err = dbxdec(capsys, root, "backfill", "--resume", "undo_orders-20240101T000000-x")
    assert code == 2
    assert "no backfill 'undo_orders-20240101T000000-x'" in assert_one_error_line(err)
    code, out, err = dbxdec(capsys, root, "backfill")
    assert code == 2
    assert assert_one_error_line(err) == "Error: missing JOB (or --resume ID)"
    code, out, err = dbxdec(capsys, root, "backfill", "undo_orders", "--bogus")
    assert code == 2
    line = assert_one_error_line(err)
    assert line.startswith("Error: No such option '--bogus'.")
    assert line.endswith("(see 'dbxdec backfill --help')")


def test_a_job_named_undo_is_reached_with_an_option_first(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = dbxdec(
        capsys,
        root,
        "backfill",
        "--start",
        "2024-01-01",
        "--end",
        "2024-01-02",
        "undo",
        "--local",
        "--dry-run",
        "--json",
    )
    assert code == 0, out + err
    plan = json.loads(out)
    assert plan["job"] == "undo"
    assert [run["keys"] for run in plan["runs"]] == [["2024-01-01"], ["2024-01-02"]]
    # as the first argument, 'undo' is the subcommand, and a plan option is refused
    code, out, err = dbxdec(capsys, root, "backfill", "undo", "--start", "2024-01-01")
    assert code == 2
    line = assert_one_error_line(err)
    assert line.startswith("Error: No such option '--start'.")
    assert (
        "To backfill a job named 'undo', put an option before its name: "
        "dbxdec backfill --start A --end B undo" in line
    )
