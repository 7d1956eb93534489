"""``dbxdec backfill|catchup ... --detach`` and ``--resume ID --detach`` end to end (issue 28).

The real CLI runs in-process against the emulator, whose controller job's runs are real
``dbxdec-controller`` processes (:mod:`tests.launch.controller_fixtures`). The emulator
holds each controller process's start (``hold_starts``), so what the workspace received
when the command returned is counted before any controller code could act: one
controller ``run-now``, no ``run-now`` of the backfilled job. Then the process starts,
the command long gone, and the backfill finishes: every key exactly once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.launch.ledger.journal import control_ops
from databricks_bundle_decorators.testing._endpoints._emulator_processes import (
    ProcessRuns,
    processes_of,
)
from tests.launch.conftest import write_project
from tests.launch.controller_fixtures import TOKEN, Workspace, open_workspace

from .clirun import Cli, assert_one_error_line

DAYS = [f"2024-01-0{d}" for d in range(1, 7)]
SPAN = ("--start", DAYS[0], "--end", DAYS[-1])
ALICE = "alice@example.com"
OWNER = "emulator@example.com"  # the emulator's caller by default: the jobs' owner


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """The emulator (token required) as the environment's workspace, for the CLI."""
    for opened in open_workspace(tmp_path, monkeypatch):
        with pytest.MonkeyPatch.context() as env:  # undone before the fixture's last check
            for name in [n for n in os.environ if n.startswith("DATABRICKS_")]:
                env.delenv(name)
            env.setenv("DATABRICKS_HOST", opened.emu.url)
            env.setenv("DATABRICKS_TOKEN", TOKEN)
            env.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
            yield opened


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(write_project(tmp_path / "project"), capsys)


def _detached(workspace: Workspace, cli: Cli, *args: str) -> tuple[dict[str, Any], str]:
    """Run ``dbxdec ARGS --detach --json`` with the controller's start held; check what
    the workspace got by the time it returned; the facts printed and the output."""
    processes = processes_of(workspace.emu)
    processes.hold_starts = True
    before = len(workspace.emu.run_now_bodies(workspace.controller_job))
    code, out, err = cli(*args, "--detach", "--json")
    assert code == 0, err
    _assert_only_the_controller_started(workspace, processes, before)
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["event"] == "detached"
    assert facts["follow"] == f"dbxdec backfill watch {facts['backfill_id']}"
    return facts, out + err


def _assert_only_the_controller_started(
    workspace: Workspace, processes: ProcessRuns, before: int
) -> None:
    emu = workspace.emu
    assert processes.held_starts() == 1  # started as a run, no controller code ran yet
    assert len(emu.run_now_bodies(workspace.controller_job)) == before + 1
    assert emu.run_now_bodies(workspace.job_id) == []  # nothing of the job launched


def _finishes_every_key_once(workspace: Workspace) -> None:
    processes_of(workspace.emu).release_starts()  # the command has returned
    workspace.wait_backfill_done(len(DAYS))
    assert workspace.keys_run() == {d: 1 for d in DAYS}, workspace.outputs()
    runs = workspace.emu.runs(workspace.job_id)
    assert [r.result_state for r in runs] == ["SUCCESS"] * len(DAYS)


@pytest.mark.parametrize("command", ["backfill", "catchup"])
def test_detach_returns_once_the_controller_run_is_started_and_it_finishes_alone(
    workspace: Workspace, cli: Cli, command: str
) -> None:
    facts, printed = _detached(workspace, cli, command, "nightly", *SPAN)
    (body,) = workspace.emu.run_now_bodies(workspace.controller_job)
    assert body["job_parameters"]["backfill_id"] == facts["backfill_id"]
    assert body["job_parameters"]["generation"] == "1"
    _finishes_every_key_once(workspace)
    workspace.assert_tokenless(printed)


def test_resume_detach_starts_the_next_generation_which_finishes_the_backfill(
    workspace: Workspace, cli: Cli
) -> None:
    emu = workspace.emu
    facts, first = _detached(workspace, cli, "backfill", "nightly", *SPAN)
    emu.workspace_client().jobs.cancel_run(facts["controller_run_id"])  # gone, never ran
    emu.wait_for(
        lambda runs: not any(r.active for r in runs),
        job_id=workspace.controller_job,
        what="the first controller run cancelled",
    )
    processes_of(emu).release_starts()  # nothing: its run was cancelled
    assert processes_of(emu).outputs() == []

    resumed, again = _detached(workspace, cli, "backfill", "--resume", facts["backfill_id"])

    assert resumed["backfill_id"] == facts["backfill_id"]
    bodies = emu.run_now_bodies(workspace.controller_job)
    assert [b["job_parameters"]["generation"] for b in bodies] == ["1", "2"]
    _finishes_every_key_once(workspace)
    workspace.assert_tokenless(first, again)


@pytest.mark.parametrize("action", ["unpause", "cancel"])
def test_unpause_and_cancel_without_can_manage_run_are_refused_in_one_line(
    workspace: Workspace, cli: Cli, action: str
) -> None:
    emu = workspace.emu
    facts, printed = _detached(workspace, cli, "backfill", "nightly", *SPAN)
    bid = facts["backfill_id"]
    emu.set_job_permissions(workspace.job_id, [("user", ALICE, "CAN_VIEW")])
    emu.answer_me_as(ALICE, groups=["analysts"])
    code, out, err = cli("backfill", action, bid)
    assert code == 4 and out == ""  # 4: "no CAN_MANAGE_RUN on the job" (the command's help)
    assert assert_one_error_line(err) == (
        f"Error: {ALICE} may not {action} backfill {bid}: that needs CAN_MANAGE_RUN on job "
        f"nightly (job id {workspace.job_id}), granted to the user or to a group they are "
        "directly in; ask an owner of the job to grant it (a writable /Shared folder is not "
        "enough)"
    )
    client = emu.workspace_client()
    assert control_ops(client, workspace.job_id, bid) == []  # nothing recorded
    assert len(emu.run_now_bodies(workspace.controller_job)) == 1  # nothing started
    emu.answer_me_as(OWNER)
    _finishes_every_key_once(workspace)  # the refused request changed nothing
    workspace.assert_tokenless(printed, out, err)
