"""Journal fencing between two real controller runs of one backfill (issue 28, "Must show").

The claim keeps a second controller out while the first one holds it; the journal's
segment numbers (created without overwrite: :mod:`...launch.ledger.journal`) are what
stops a second controller that got past the claim legitimately. Here the second reads
the journal, then waits on the network at its claim's create (the emulator's request
hold) while the first finishes the backfill and releases the claim; the second then
takes the free claim with a journal that is segments behind, and its first append finds
its segment written by the first: it stops with exit 7 and launches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import Workspace, open_workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]  # cap 4: four run, two wait


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


def test_a_second_controller_past_the_claim_loses_the_journal_append_and_stops_with_7(
    workspace: Workspace, registry: Registry
) -> None:
    emu, client = workspace.emu, workspace.emu.workspace_client()
    emu.hold_runs = True  # the first controller is mid-backfill: four in flight, two wait
    detached = workspace.detach(registry, KEYS)
    emu.wait_for(lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4)
    (first,) = emu.runs(workspace.controller_job)
    claim = f"/Shared/dbxdec/claims/job-{workspace.job_id}/{detached.backfill_id}.json"

    def claim_create(method: str, path: str, body: Mapping[str, object]) -> bool:
        return (
            path.endswith("/workspace/import")
            and body.get("path") == claim
            and (
                body.get("overwrite") is False  # a create: the first only renews (overwrite)
            )
        )

    emu.hold_requests(claim_create)
    second = client.jobs.run_now(
        workspace.controller_job,
        job_parameters={"backfill_id": detached.backfill_id, "job_id": str(workspace.job_id)},
        idempotency_token="a-second-controller",
    ).run_id
    emu.wait_for_held_requests(1)  # the second read the journal; its claim is on the wire
    emu.release()  # the first finishes every key, ends and releases its claim
    emu.wait_for(
        lambda runs: any(r.run_id == first.run_id and not r.active for r in runs),
        what="the first controller finished",
    )
    launched = len(emu.launch_bodies(workspace.job_id))
    emu.release_requests()  # the second takes the free claim, a journal behind
    workspace.wait_backfill_done(len(KEYS))

    attempts = processes_of(emu).outputs(second)
    assert [a.returncode for a in attempts] == [7, 0], workspace.outputs()
    lost = attempts[0].stdout.decode()
    assert re.search(
        rf"journal segment \d+ was written by controller:{first.run_id}:\w+; this "
        "controller stops",
        lost,
    ), lost
    assert "submitted" not in lost  # it launched nothing ...
    assert len(emu.launch_bodies(workspace.job_id)) == launched == len(KEYS)  # ... not even
    # a run-now answered with an existing run
    assert "has nothing left to run" in attempts[1].stdout.decode()  # its retry: done
    assert [r.result_state for r in emu.runs(workspace.controller_job)] == ["SUCCESS"] * 2
    runs = emu.runs(workspace.job_id)
    assert sorted(r.job_parameters["backfill_key"] for r in runs) == sorted(KEYS)
    assert all(r.result_state == "SUCCESS" for r in runs)
    assert workspace.keys_run() == {k: 1 for k in KEYS}
    assert read_journal(client, workspace.job_id, detached.backfill_id).state == "succeeded"
