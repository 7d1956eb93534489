"""Kill trials and fencing of the detached backfill's controller (issue 28).

Each kill trial ends one controller process with ``os._exit(137)`` at an enumerated point
(injected by :mod:`.killing_controller`, which the emulator runs in place of the
shipped entry point; a marker file makes it happen once); the emulator retries the task (``max_retries: -1``) or the next
generation goes on, and the next controller process takes over from the journal. Each
ends with every key succeeded exactly once and no key run twice. Settings: see
:mod:`.controller_fixtures`; the tests sync on the emulator's ``wait_for`` conditions.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill.wire.controller import handover_token
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.control.controller import start_controller
from databricks_bundle_decorators.launch.ledger.journal import (
    JournalLost,
    append_control,
    open_journal,
    read_journal,
)
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import Workspace, open_workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


def _every_key_once(workspace: Workspace, keys: list[str]) -> None:
    runs = workspace.emu.runs(workspace.job_id)
    succeeded = [r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"]
    assert sorted(succeeded) == sorted(keys), workspace.outputs()
    assert workspace.keys_run() == {k: 1 for k in keys}, workspace.outputs()


def _journaled_tokens_sent(workspace: Workspace, backfill_id: str) -> None:
    """Each key has one attempt in the journal, and every ``run-now`` of it carried that
    attempt's token: a controller that took over re-sent it, never a new one."""
    ledger = read_journal(workspace.emu.workspace_client(), workspace.job_id, backfill_id)
    journaled = {}
    for record in ledger.slices:
        assert [a.number for a in record.attempts] == [1], record
        journaled[record.parameters["backfill_key"]] = record.attempts[0].token
    sent: dict[str, set[str]] = {}
    for body in workspace.emu.run_now_bodies(workspace.job_id):
        sent.setdefault(body["job_parameters"]["backfill_key"], set()).add(
            body["idempotency_token"]
        )
    assert sent == {key: {token} for key, token in journaled.items()}, workspace.outputs()


@pytest.mark.parametrize("point", ["before-submit:3", "after-submit:3", "poll:2"])
def test_a_controller_killed_mid_flight_is_retried_and_the_retry_takes_over(
    workspace: Workspace, registry: Registry, point: str
) -> None:
    workspace.kill_at(point)
    detached = workspace.detach(registry, KEYS)
    workspace.wait_backfill_done(len(KEYS))
    _every_key_once(workspace, KEYS)
    assert workspace.attempts()[0] == 137 and workspace.attempts()[-1] == 0
    assert len(workspace.emu.runs(workspace.controller_job)) == 1  # retried in the same run
    _journaled_tokens_sent(workspace, detached.backfill_id)
    if point.startswith("after-submit"):  # the answer was lost with the process: the
        # retry asked again with the same token and was answered the same run
        bodies = workspace.emu.run_now_bodies(workspace.job_id)
        keys = [b["job_parameters"]["backfill_key"] for b in bodies]
        assert len(keys) > len(set(keys))
    workspace.assert_tokenless()  # nor in what the killed process left behind


def test_a_controller_killed_during_its_handover(workspace: Workspace, registry: Registry) -> None:
    emu = workspace.emu
    first = 7000
    emu.set_next_run_id(first)  # generation 1's run id, known before it starts

    def next_generation_claims(method: str, path: str, body: Mapping[str, object]) -> bool:
        """A claim create by any controller run but generation 1's (which the retry of
        the killed handover is): generation 2 waits there, the retry drives."""
        if not (path.endswith("/workspace/import") and body.get("overwrite") is False):
            return False
        try:
            claim = json.loads(base64.b64decode(str(body.get("content", ""))) or b"{}")
        except ValueError:  # not JSON: no claim
            return False
        host = str(claim.get("host")) if isinstance(claim, dict) else ""
        return host.startswith("controller run ") and host != f"controller run {first}"

    emu.hold_requests(next_generation_claims)
    workspace.tune(handover_after="0.3")
    workspace.kill_at("handover:1")
    emu.default_duration = 0.6  # runs in flight at the handover
    detached = workspace.detach(registry, KEYS)
    emu.wait_for_held_requests(1)  # generation 2 started, its claim waits on the wire
    emu.wait_for(
        lambda runs: any(r.run_id == first and not r.active for r in runs),
        what="the retry of the killed handover handed over again and ended",
    )
    emu.release_requests()
    workspace.wait_backfill_done(len(KEYS), timeout=60)
    _every_key_once(workspace, KEYS)
    assert workspace.attempts()[:2] == [137, 0]  # the handover killed, its retry done
    runs = emu.runs(workspace.controller_job)
    generations = [int(r.job_parameters["generation"]) for r in runs]
    assert sorted(generations) == list(range(1, len(runs) + 1)) and len(runs) >= 2
    for run, generation in zip(runs, generations, strict=True):  # one run per generation
        assert run.idempotency_token == handover_token(detached.backfill_id, generation)
    g2 = handover_token(detached.backfill_id, 2)
    sent = [b["idempotency_token"] for b in emu.run_now_bodies(workspace.controller_job)]
    assert sent.count(g2) == 2, workspace.outputs()  # the killed handover's and its retry's
    assert [r.idempotency_token for r in runs].count(g2) == 1  # ... started one run
    retried = processes_of(emu).outputs(first)[1].stdout.decode()
    (g2_run,) = [r for r in runs if r.idempotency_token == g2]
    assert f"handed over to controller run {g2_run.run_id} (generation 2)" in retried
    _journaled_tokens_sent(workspace, detached.backfill_id)
    workspace.assert_tokenless()


def test_a_controller_killed_during_a_cancel_leaves_nothing_running_and_resumes(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    emu.hold_runs = True  # every run stays RUNNING until released: the cancel finds them
    workspace.kill_at("cancel:1")
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    client = emu.workspace_client()
    append_control(client, workspace.job_id, detached.backfill_id, "cancel", by="test")
    emu.wait_for(
        lambda runs: not any(r.active for r in runs),
        what="the cancel finished, nothing running",
    )
    assert 137 in workspace.attempts()
    ledger = read_journal(client, workspace.job_id, detached.backfill_id)
    assert ledger.state == "interrupted"
    assert not any(r.active for r in emu.runs(workspace.job_id))
    # resume: unpause and start the next generation
    emu.hold_runs = False
    append_control(client, workspace.job_id, detached.backfill_id, "unpause", by="test")
    start_controller(
        client,
        workspace.controller_job,
        backfill_id=detached.backfill_id,
        job_id=workspace.job_id,
        generation=2,
    )
    workspace.wait_backfill_done(len(KEYS))
    runs = emu.runs(workspace.job_id)
    succeeded = [r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"]
    assert sorted(succeeded) == sorted(KEYS)
    tokens = [r.idempotency_token for r in runs]
    assert len(tokens) == len(set(tokens))  # one run per attempt
    workspace.assert_tokenless()


def test_two_controllers_at_once_the_second_stops_and_no_key_runs_twice(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    emu.hold_runs = True  # the first controller is mid-backfill while the second starts
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    client = emu.workspace_client()
    second = client.jobs.run_now(
        workspace.controller_job,
        job_parameters={"backfill_id": detached.backfill_id, "job_id": str(workspace.job_id)},
        idempotency_token="a-second-controller",
    ).run_id
    emu.wait_for(
        lambda runs: any(r.run_id == second and not r.active for r in runs),
        what="the second controller stopped",
    )
    assert len(emu.runs(workspace.job_id)) == 4  # it launched nothing
    emu.hold_runs = False
    emu.release()
    workspace.wait_backfill_done(len(KEYS))
    _every_key_once(workspace, KEYS)
    assert "another controller run drives backfill" in workspace.outputs()
    (run,) = [r for r in emu.runs(workspace.controller_job) if r.run_id == second]
    assert run.result_state == "SUCCESS"


def test_a_controller_that_finds_its_next_segment_written_stops_with_7(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    emu.hold_runs = True
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    client = emu.workspace_client()
    for _ in range(20):  # the controller may write between the read and the save: again
        intruder = open_journal(client, workspace.job_id, detached.backfill_id, writer="intruder")
        try:
            intruder.save()  # segment n+1 is the intruder's: the controller's next save loses
            break
        except JournalLost:
            continue
    emu.hold_runs = False
    emu.release()
    workspace.wait_backfill_done(len(KEYS))
    assert workspace.attempts()[0] == 7
    assert "was written by intruder; this controller stops" in workspace.outputs()
    _every_key_once(workspace, KEYS)
