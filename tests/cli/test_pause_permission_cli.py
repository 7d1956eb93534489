"""``dbxdec backfill A --downstream`` (local and ``--detach``) when the principal that would
pause B's trigger holds only CAN_MANAGE_RUN on B: refused before anything starts, in one
line, exit 4 -- no ``jobs/update`` received, no run, no marker, no journal; with CAN
MANAGE it runs. An ACL that cannot be read is refused too (exit 4).

Real: the CLI, the SDK against the emulator (which enforces the job ACL table once a test
sets an ACL), the controller as a ``dbxdec-controller`` subprocess. ``--pause-schedule``
for the caller is in ``test_pause_schedule_cli.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from databricks.sdk.service.jobs import JobRunAs, JobSettings

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import write_project

from ..launch.controller_fixtures import controller_job
from ..launch.downstream_project import own_jobs
from .clirun import assert_one_error_line
from .test_downstream_cli import dbxdec
from .test_friction import help_of

OWNER = "emulator@example.com"  # the emulator's default caller: it creates the jobs
ALICE = "alice@example.com"
CONTROLLER_SP = "5d7e1c2a-3b4f-4a6d-8e9f-0a1b2c3d4e5f"
UPDATE = "/api/2.2/jobs/update"
RUN_NOW = "/api/2.2/jobs/run-now"
PIPELINES = """\
from databricks_bundle_decorators import DailyBackfill, TableUpdate, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

A = source("main.acl.a", event_time="ts")


@job(name="acl_a", backfill=DailyBackfill("2024-01-01"))
def acl_a():
    @task(io_manager=SparkTableIoManager("main.acl.a", partition_column="day"))
    def write():
        ...

    write()


@job(name="acl_b", backfill=DailyBackfill("2024-01-01"), sources=[A],
     triggered_by=TableUpdate([A]))
def acl_b():
    @task(io_manager=SparkTableIoManager("main.acl.b", partition_column="day"))
    def write():
        ...

    write()
"""
ARGS = ("backfill", "acl_a", "--keys", "2024-01-30", "--downstream", "--poll-interval", "0.01")


_MODULES = itertools.count()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    module = f"acl_pipelines_{next(_MODULES)}"  # imported once per process: a new name each
    root = write_project(tmp_path / "project", module)
    (root / f"{module}.py").write_text(PIPELINES)
    with own_jobs():  # --downstream reads every job: none of other tests' projects
        yield root


def _deploy(emu: JobsEmulator) -> tuple[int, int]:
    a = emu.create_job("acl_a")
    b = emu.create_job(
        "acl_b", settings={"trigger": {"table_update": {"table_names": ["main.acl.a"]}}}
    )
    return a, b


def _trigger(emu: JobsEmulator, job_id: int) -> str:
    return str(emu.job_settings(job_id)["trigger"].get("pause_status", "UNPAUSED"))


def _nothing_started(emu: JobsEmulator, project: Path) -> None:
    """No pause, no run, no marker or journal, no ledger."""
    calls = [path for _, path in emu.request_log if path in (UPDATE, RUN_NOW)]
    assert calls == []
    assert not list((project / ".dbxdec" / "paused").rglob("*.json"))
    assert emu.workspace_files("/") == {}
    assert list_ledgers(project) == []


def test_a_caller_with_only_can_manage_run_on_a_dependant_is_refused_before_anything(
    workspace_env: JobsEmulator, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = workspace_env
    a, b = _deploy(emu)
    emu.set_job_permissions(a, [("user", ALICE, "CAN_MANAGE_RUN")])
    emu.set_job_permissions(b, [("user", ALICE, "CAN_MANAGE_RUN")])
    emu.answer_me_as(ALICE, groups=["analysts"])

    code, out, err = dbxdec(project, capsys, *ARGS)

    assert code == 4 and out == "", out + err
    assert assert_one_error_line(err) == (
        f"Error: --downstream: the caller {ALICE} has CAN_MANAGE_RUN on job 'acl_b' (job id "
        f"{b}); pausing its trigger (jobs/update) needs CAN_MANAGE (or IS_OWNER), so nothing "
        f"was paused or started; ask an owner of job 'acl_b' to grant {ALICE} CAN_MANAGE on "
        "it (directly or to a group it is directly in), or run without --downstream"
    )
    _nothing_started(emu, project)

    emu.set_job_permissions(b, [("group", "analysts", "CAN_MANAGE")])
    code, out, err = dbxdec(project, capsys, *ARGS)
    assert code == 0, out + err
    assert [kind for kind, _ in emu.job_change_bodies(b)] == ["create", "update", "update"]
    assert _trigger(emu, b) == "UNPAUSED"
    assert len(emu.runs(a)) == 1


def test_an_acl_that_cannot_be_read_is_refused_in_one_line(
    workspace_env: JobsEmulator, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = workspace_env
    a, b = _deploy(emu)
    emu.set_job_permissions(a, [("user", ALICE, "CAN_MANAGE_RUN")])
    emu.set_job_permissions(b, [("user", "bob@example.com", "IS_OWNER")])  # 403 for Alice
    emu.answer_me_as(ALICE)

    code, out, err = dbxdec(project, capsys, *ARGS)

    assert code == 4 and out == "", out + err
    line = assert_one_error_line(err)
    assert line.startswith(
        f"Error: --downstream: could not read the permissions of job 'acl_b' (job id {b}) for "
        f"the caller {ALICE}: the workspace refused;"
    ), line
    _nothing_started(emu, project)


def test_detach_refuses_a_controller_principal_with_only_can_manage_run_then_runs_with_it(
    workspace_env: JobsEmulator, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = workspace_env
    a, b = _deploy(emu)
    controller = controller_job(emu)
    run_as = JobSettings(run_as=JobRunAs(service_principal_name=CONTROLLER_SP))
    emu.workspace_client().jobs.update(controller, new_settings=run_as)
    emu.set_principal_groups(CONTROLLER_SP, ["etl"])
    emu.set_job_permissions(
        b, [("user", OWNER, "IS_OWNER"), ("service_principal", CONTROLLER_SP, "CAN_MANAGE_RUN")]
    )
    emu.request_log.clear()

    code, out, err = dbxdec(project, capsys, *ARGS, "--detach")

    assert code == 4 and out == "", out + err
    assert assert_one_error_line(err) == (
        f"Error: --downstream: the controller job's principal {CONTROLLER_SP} has "
        f"CAN_MANAGE_RUN on job 'acl_b' (job id {b}); pausing its trigger (jobs/update) needs "
        "CAN_MANAGE (or IS_OWNER), so nothing was paused or started; ask an owner of job "
        f"'acl_b' to grant {CONTROLLER_SP} CAN_MANAGE on it (directly or to a group it is "
        "directly in), or run without --downstream"
    )
    _nothing_started(emu, project)
    assert emu.runs(controller) == []

    emu.set_job_permissions(b, [("user", OWNER, "IS_OWNER"), ("group", "etl", "CAN_MANAGE")])
    code, out, err = dbxdec(project, capsys, *ARGS, "--detach")
    assert code == 0, out + err
    emu.wait_for(
        lambda runs: bool(runs) and not any(r.active for r in runs),
        job_id=controller,
        what="the controller run ended",
    )
    assert len(emu.runs(a)) == 1
    statuses = [
        body["new_settings"]["trigger"]["pause_status"] for _, body in emu.job_change_bodies(b)[1:]
    ]
    assert statuses == ["PAUSED", "UNPAUSED"]  # paused at --detach, restored by the controller
    assert _trigger(emu, b) == "UNPAUSED"


def test_backfill_help_says_which_permission_each_pausing_option_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of("backfill", capsys)
    assert "Pausing is a jobs/update: it needs CAN MANAGE (or IS OWNER) on the job" in text
    assert "that needs CAN MANAGE on each dependant (checked before anything starts)" in text
    assert "SQL warehouse needs CAN USE and its tables SELECT" in text
    assert (
        "The controller job's principal (its run_as) needs CAN MANAGE RUN on the backfilled "
        "jobs (run now, cancel) and, with --downstream, CAN MANAGE on each dependant"
    ) in text
