"""Claims: one active backfill per job and key, held in the workspace (through the real
WorkspaceClient over HTTP against the emulator) or, locally, with an flock.

Clocks are passed in (``clock=``), so expiry is a matter of arguments, not of waiting.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.claims import (
    ClaimRecord,
    claimed_keys,
    key_summary,
    when,
)
from databricks_bundle_decorators.launch.ledger.lease import (
    CLAIMS_DIR,
    CLAIMS_DIR_ENV,
    LocalLock,
    WorkspaceClaims,
    claims_folder,
)
from databricks_bundle_decorators.launch.ledger.ledger import Attempt
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.interrupts import Interrupts
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS
from .test_scheduler import day, make_ledger

T0 = 1_717_200_000.0  # 2024-06-01 00:00:00 UTC
HOST = socket.gethostname()


def claims(
    emu: JobsEmulator, job_id: int, *, at: float = T0, force: bool = False, **kw: object
) -> WorkspaceClaims:
    return WorkspaceClaims(
        emu.workspace_client(),
        job="nightly",
        job_id=job_id,
        force=force,
        clock=lambda: at,
        **kw,  # type: ignore[arg-type]
    )


def claim_files(emu: JobsEmulator) -> dict[str, dict[str, object]]:
    return {p: json.loads(c) for p, c in emu.workspace_files(CLAIMS_DIR).items()}


def days(first: int, last: int) -> list[str]:
    return [day(i) for i in range(first, last + 1)]


def ignore(message: str) -> None:
    """A claim-lost callback for claims that cannot be lost in the test."""


def a_dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def job_id(emu: JobsEmulator) -> int:
    # deployed by this dbxdec (with dbxdec_order: no warning about an older deployment)
    parameters = {**BACKFILL_PARAMS, "dbxdec_order": ""}
    return emu.create_job("nightly", parameters=parameters, max_concurrent_runs=100)


def test_a_claim_is_a_workspace_file_naming_the_backfill_until_released(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    ledger = make_ledger(root / "a", days(0, 9))
    holder = claims(emu, job_id)

    holder.acquire(ledger)

    path = f"{CLAIMS_DIR}/job-{job_id}/{ledger.id}.json"
    assert list(claim_files(emu)) == [path]
    content = claim_files(emu)[path]
    assert content["backfill_id"] == ledger.id and content["job"] == "nightly"
    assert content["job_id"] == job_id and content["keys"] == days(0, 9)
    assert (content["host"], content["pid"]) == (HOST, os.getpid())
    assert content["user"] == "emulator@example.com"  # the workspace user, from SCIM Me
    assert content["started_at"] == "2024-06-01T00:00:00.000+00:00"
    assert content["expires_at"] == "2024-06-01T00:05:00.000+00:00"  # 5 minutes
    holder.release()
    assert claim_files(emu) == {}


def test_an_overlapping_backfill_is_refused_in_one_line_and_withdraws(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    first = make_ledger(root / "a", days(0, 9))
    claims(emu, job_id).acquire(first)
    second = make_ledger(root / "b", days(5, 14))

    with pytest.raises(UsageError) as refused:
        claims(emu, job_id, at=T0 + 30).acquire(second)

    line = refused.value.render()
    assert "\n" not in line
    assert line.startswith(
        f"backfill {first.id} (emulator@example.com on {HOST}, started 2024-06-01 00:00:00 UTC) "
        f"is already running 2024-01-01..2024-01-10 (10 keys) of job 'nightly' "
        "(5 of your 10 keys): wait until it ends (dbxdec backfills on "
    )
    assert "take over with --force once its claim expires (2024-06-01 00:05:00 UTC" in line
    assert [c["backfill_id"] for c in claim_files(emu).values()] == [first.id]  # withdrawn


def test_backfills_over_disjoint_keys_of_one_job_run_side_by_side(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    claims(emu, job_id).acquire(make_ledger(root / "a", days(0, 4)))
    claims(emu, job_id).acquire(make_ledger(root / "b", days(5, 9)))
    other_job = emu.create_job("weekly", parameters=BACKFILL_PARAMS)
    claims(emu, other_job).acquire(make_ledger(root / "c", days(0, 4)))
    assert len(claim_files(emu)) == 3


def test_force_takes_over_only_an_expired_claim(emu: JobsEmulator, root: Path, job_id: int) -> None:
    first = make_ledger(root / "a", days(0, 9))
    abandoned = claims(emu, job_id)
    abandoned.acquire(first)  # its launcher dies: nobody renews it
    second = make_ledger(root / "b", days(0, 9))

    with pytest.raises(UsageError) as live:
        claims(emu, job_id, at=T0 + 299, force=True).acquire(second)
    assert live.value.render().startswith(
        f"--force: backfill {first.id} (emulator@example.com on {HOST}, started "
        "2024-06-01 00:00:00 UTC) is alive and holds 2024-01-01..2024-01-10 (10 keys) of job "
        "'nightly' (all 10 of your keys); its claim was renewed 2024-06-01 00:00:00 UTC and "
        "lasts until 2024-06-01 00:05:00 UTC: --force takes over only a claim that expired"
    )
    with pytest.raises(
        UsageError, match=r"left a stale claim on 2024-01-01\.\.2024-01-10"
    ) as stale:
        claims(emu, job_id, at=T0 + 300).acquire(second)
    assert f"resume it on {HOST} with dbxdec backfill --resume {first.id}" in str(stale.value)
    assert "take its keys over with --force" in str(stale.value)

    taker = claims(emu, job_id, at=T0 + 300, force=True)
    taker.acquire(second)
    assert [c["backfill_id"] for c in claim_files(emu).values()] == [second.id]

    assert abandoned.renew() is False  # the old launcher, were it to wake up, stops
    assert abandoned.lost == (
        f"the claim of backfill {first.id} on job 'nightly' was taken over by backfill "
        f"{second.id} (emulator@example.com on {HOST}, started 2024-06-01 00:05:00 UTC); "
        "launching no more runs"
    )
    abandoned.release()  # not its claim any more: left alone
    assert [c["backfill_id"] for c in claim_files(emu).values()] == [second.id]


def test_renewal_moves_the_expiry_so_the_claim_stays_live(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    now = [T0]
    first = make_ledger(root / "a", days(0, 2))
    holder = WorkspaceClaims(
        emu.workspace_client(), job="nightly", job_id=job_id, clock=lambda: now[0]
    )
    holder.acquire(first)
    now[0] = T0 + 240

    assert holder.renew() is True

    (content,) = claim_files(emu).values()
    assert content["renewed_at"] == "2024-06-01T00:04:00.000+00:00"
    assert content["expires_at"] == "2024-06-01T00:09:00.000+00:00"
    with pytest.raises(UsageError, match=r"^--force: .* lasts until 2024-06-01 00:09:00 UTC"):
        claims(emu, job_id, at=T0 + 400, force=True).acquire(make_ledger(root / "b", [day(2)]))


def test_a_deleted_claim_is_lost_at_the_next_renewal(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    ledger = make_ledger(root / "a", days(0, 2))
    holder = claims(emu, job_id)
    holder.acquire(ledger)
    (path,) = emu.workspace_files(CLAIMS_DIR)
    emu.workspace_client().workspace.delete(path)  # e.g. an admin cleaning up

    assert holder.renew() is False
    assert holder.lost == (
        f"the claim of backfill {ledger.id} on job 'nightly' was deleted; launching no more runs"
    )
    assert claim_files(emu) == {}  # not written again


def test_the_renewal_thread_reports_a_claim_it_let_expire(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    now = [T0]
    ledger = make_ledger(root / "a", days(0, 2))
    holder = WorkspaceClaims(
        emu.workspace_client(),
        job="nightly",
        job_id=job_id,
        renew_every=0.01,
        clock=lambda: now[0],
    )
    lost: list[str] = []
    told = threading.Event()

    def on_lost(message: str) -> None:
        lost.append(message)
        told.set()

    with holder.hold(ledger, on_lost):
        now[0] = T0 + 3600  # the launcher was stalled for an hour (a laptop asleep)
        assert told.wait(timeout=60)
    assert lost == [
        f"the claim of backfill {ledger.id} on job 'nightly' expired at "
        "2024-06-01 00:05:00 UTC before it was renewed (was this launcher stalled?); "
        "launching no more runs"
    ]
    assert claim_files(emu) == {}  # still its own file: released at the end


def test_resuming_a_backfill_whose_launcher_died_here_needs_no_force(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    ledger = make_ledger(root / "a", days(0, 4))
    dead = ClaimRecord(
        ledger.id, "nightly", job_id, HOST, a_dead_pid(), "emulator@example.com",
        T0, T0, T0 + 300, tuple(days(0, 4)), "0123456789abcdef",
    )  # fmt: skip
    path = f"{claims_folder(job_id)}/{ledger.id}.json"
    emu.put_workspace_file(path, dead.to_text().encode())
    other = make_ledger(root / "b", days(3, 6))

    with pytest.raises(UsageError) as refused:  # another backfill is told to resume it
        claims(emu, job_id, at=T0 + 10).acquire(other)
    assert (
        f"holds 2024-01-01..2024-01-05 (5 keys) of job 'nightly' (2 of your 4 keys) but its "
        f"launcher (pid {dead.pid}) is no longer running on this machine: resume it with "
        f"dbxdec backfill --resume {ledger.id}, or take its keys over with --force"
    ) in refused.value.render()

    resumed = claims(emu, job_id, at=T0 + 10)
    resumed.acquire(ledger)  # the same backfill, resumed: taken over at once
    (content,) = claim_files(emu).values()
    assert content["pid"] == os.getpid() and content["claim_id"] != dead.claim_id


def test_a_second_launcher_of_the_same_backfill_is_refused(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    ledger = make_ledger(root / "a", days(0, 2))
    claims(emu, job_id).acquire(ledger)
    with pytest.raises(UsageError, match=f"^backfill {ledger.id} .* is already running"):
        claims(emu, job_id, at=T0 + 1).acquire(ledger)  # --resume in a second terminal
    assert len(claim_files(emu)) == 1


def test_a_lost_reply_to_the_claim_is_recognised_as_our_own(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    emu.inject_fault("/api/2.0/workspace/import", kind="drop_after")  # applied, reply lost

    claims(emu, job_id).acquire(make_ledger(root / "a", days(0, 2)))  # the SDK sends it again

    assert emu.faults["drop_after /api/2.0/workspace/import"] == 1
    assert emu.requests["/api/2.0/workspace/import"] == 2 and len(claim_files(emu)) == 1


def test_active_runs_the_backfill_did_not_launch_refuse_it(
    emu: JobsEmulator, root: Path, job_id: int, registry: Registry
) -> None:
    emu.hold_runs = True
    w = emu.workspace_client()
    single = w.jobs.run_now(job_id, job_parameters={"backfill_key": day(3)}).run_id
    ranged = w.jobs.run_now(
        job_id, job_parameters={"backfill_start_key": day(20), "backfill_key": day(22)}
    ).run_id
    w.jobs.run_now(job_id, job_parameters={"backfill_key": day(40)})  # no overlap
    definition = registry.get("nightly").backfill

    with pytest.raises(UsageError) as refused:
        claims(emu, job_id, backfill=definition).acquire(make_ledger(root / "a", days(0, 24)))

    assert refused.value.render() == (
        f"runs {single}, {ranged} of job 'nightly' (job {job_id}), not launched by this "
        "backfill, are running 2024-01-04..2024-01-23 (4 keys) that this backfill would run "
        f"(since {_since(emu, single)}): wait until they end, or cancel them, then launch again"
    )
    assert claim_files(emu) == {}  # withdrawn
    emu.release()


def test_without_the_definition_a_ranged_run_covers_the_keys_between_its_ends(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    emu.hold_runs = True
    run_id = (
        emu.workspace_client()
        .jobs.run_now(job_id, job_parameters={"backfill_start_key": day(1), "backfill_key": day(2)})
        .run_id
    )
    with pytest.raises(
        UsageError, match=rf"^run {run_id} of job .* running 2024-01-02\.\.2024-01-03"
    ):
        claims(emu, job_id).acquire(make_ledger(root / "a", days(0, 4)))
    emu.release()


def test_runs_of_the_backfill_itself_do_not_refuse_its_resume(
    emu: JobsEmulator, root: Path, job_id: int
) -> None:
    emu.hold_runs = True
    w = emu.workspace_client()
    known = w.jobs.run_now(job_id, job_parameters={"backfill_key": day(0)}).run_id
    unanswered = w.jobs.run_now(job_id, job_parameters={"backfill_key": day(1)}).run_id
    assert known and unanswered
    ledger = make_ledger(root / "a", days(0, 2))
    first, second = ledger.slices[0], ledger.slices[1]
    ledger.update(first.with_attempt(Attempt(1, "t1", "running", run_id=str(known))))
    ledger.update(second.with_attempt(Attempt(1, "t2")))  # submitted, the reply was lost

    claims(emu, job_id).acquire(ledger)

    assert claimed_keys(ledger) == tuple(days(0, 2))
    emu.release()


def test_the_claims_folder_can_be_moved(
    emu: JobsEmulator, root: Path, job_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLAIMS_DIR_ENV, "/Shared/team/locks/")
    claims(emu, job_id).acquire(make_ledger(root / "a", [day(0)]))
    assert [p.rsplit("/", 1)[0] for p in emu.workspace_files("/Shared/team")] == [
        f"/Shared/team/locks/job-{job_id}"
    ]


def test_a_local_lock_refuses_a_second_holder_until_the_first_ends(root: Path) -> None:
    first, second = make_ledger(root, days(0, 2)), make_ledger(root, days(5, 6))
    with LocalLock(root, "nightly").hold(first, ignore):
        holder = LocalLock(root, "nightly").holder()
        assert holder is not None and holder.backfill_id == first.id
        with pytest.raises(UsageError) as refused, LocalLock(root, "nightly").hold(second, ignore):
            pass
        assert refused.value.render().startswith(
            f"backfill {first.id} (pid {os.getpid()}, started "
        )
        assert refused.value.render().endswith(
            ", 2024-01-01..2024-01-03 (3 keys)) is already running job 'nightly' locally in "
            "this project: wait until it ends (dbxdec backfills lists it); local backfills "
            "of a job run one at a time"
        )
        forced = LocalLock(root, "nightly", force=True)
        with (
            pytest.raises(UsageError, match=r"^--force: .* nothing stale"),
            forced.hold(second, ignore),
        ):
            pass
        with LocalLock(root, "other_job").hold(second, ignore):
            pass  # another job's lock
    assert LocalLock(root, "nightly").holder() is None
    with LocalLock(root, "nightly").hold(second, ignore):
        pass


@pytest.mark.parametrize(
    ("keys", "summary"),
    [
        pytest.param([], "no keys", id="none"),
        pytest.param(["eu"], "eu (1 key)", id="one"),
        pytest.param(["2024-01-03", "2024-01-01"], "2024-01-01..2024-01-03 (2 keys)", id="many"),
    ],
)
def test_key_summary(keys: list[str], summary: str) -> None:
    assert key_summary(keys) == summary


def test_a_claim_survives_its_text_and_rejects_what_is_not_one() -> None:
    record = ClaimRecord("b-1", "nightly", 7, "h", 12, "u", T0, T0 + 1, None, ("k",), "c")
    assert ClaimRecord.from_text(record.to_text()) == record
    assert ClaimRecord.from_text(replace(record, expires_at=T0 + 5).to_text()).expires_at == T0 + 5
    for text in ("[]", "{}", "not json", '{"backfill_id": 1}'):
        with pytest.raises(ValueError):
            ClaimRecord.from_text(text)


def _since(emu: JobsEmulator, run_id: int | None) -> str:
    """When run ``run_id`` started, as refusals print it."""
    runs = emu.workspace_client().jobs.list_runs(active_only=True)
    (run,) = [r for r in runs if r.run_id == run_id]
    return when((run.start_time or 0) / 1000)


def test_a_backfill_whose_claim_is_lost_launches_nothing_more(
    emu: JobsEmulator, root: Path, job_id: int, registry: Registry, tmp_path: Path
) -> None:
    emu.hold_runs = True
    pacing = Pacing(max_concurrent=2, poll_interval=0.01)
    request = BackfillRequest("nightly", start=day(0), end=day(5), pacing=pacing)
    client = emu.workspace_client()
    prepared = plan_backfill(
        request, root=root, registry=registry, warehouse=tmp_path / "wh", client=client
    )
    now = [time.time()]
    prepared.guard = WorkspaceClaims(
        client, job="nightly", job_id=job_id, renew_every=0.01, clock=lambda: now[0]
    )
    interrupts = Interrupts()
    stopped = threading.Event()
    output = io.StringIO()

    class Told(JsonReporter):
        def __call__(self, event: LaunchEvent) -> None:
            super().__call__(event)
            if event.kind == "warning":
                stopped.set()

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_backfill, prepared, Told(output), interrupts=interrupts)
        emu.wait_for_runs(2, job_id=job_id)  # two in flight, four waiting
        now[0] += 3600  # its launcher stalls past the claim's expiry
        assert stopped.wait(timeout=60)
        emu.release()
        summary = running.result(timeout=120)

    # A lost claim is no Ctrl-C: its own exit code (7), no interrupt level, no drain line.
    assert summary.exit_code == 7 and len(emu.runs(job_id)) == 2  # nothing more launched
    assert interrupts.level == 0 and '"draining"' not in output.getvalue()
    events = [json.loads(line) for line in output.getvalue().splitlines()]
    (warning,) = [e["message"] for e in events if e["event"] == "warning"]
    assert warning.startswith(f"the claim of backfill {prepared.ledger.id} on job 'nightly' ")
    assert warning.endswith(
        "before it was renewed (was this launcher stalled?); launching no more runs"
    )
