"""Tests of the Jobs API emulator, driven through the real databricks-sdk WorkspaceClient."""

from __future__ import annotations

import threading
import time

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import (
    InvalidParameterValue,
    NotFound,
    ResourceDoesNotExist,
    Unauthenticated,
)
from databricks.sdk.service.jobs import (
    QueueSettings,
    Run,
    RunLifeCycleState,
    RunLifecycleStateV2State,
    RunResultState,
    TerminationCodeCode,
)

from databricks_bundle_decorators.testing.emulator import JobsEmulator

RUN_NOW = "/api/2.2/jobs/run-now"
BACKFILL = {"backfill_key": ""}


def wait_for_run(
    w: WorkspaceClient, run_id: int, *states: RunLifeCycleState, timeout: float = 60.0
) -> Run:
    """Poll runs/get (quickly, unlike the SDK's waiter) until a state in ``states``."""
    wanted = states or (RunLifeCycleState.TERMINATED, RunLifeCycleState.SKIPPED)
    deadline = time.monotonic() + timeout
    while True:
        run = w.jobs.get_run(run_id)
        assert run.state is not None
        if run.state.life_cycle_state in wanted:
            return run
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run.state}"
        time.sleep(0.01)


def lifecycle(run: Run) -> RunLifeCycleState | None:
    return run.state.life_cycle_state if run.state else None


def result(run: Run) -> RunResultState | None:
    return run.state.result_state if run.state else None


def test_plain_workspace_client_discovers_and_lists_jobs(emu: JobsEmulator) -> None:
    w = WorkspaceClient(host=emu.url, token="dapi-test", auth_type="pat")
    assert emu.request_log[0] == ("GET", "/.well-known/databricks-config")
    job_id = emu.create_job(
        "Nightly Sales",
        parameters={"backfill_key": "", "env": "dev"},
        max_concurrent_runs=3,
        tags={"team": "data"},
        settings={"tasks": [{"task_key": "main"}]},
    )
    emu.create_job("other")

    found = list(w.jobs.list(name="nightly sales"))  # exact, case-insensitive
    assert [j.job_id for j in found] == [job_id]
    assert found[0].settings is not None and not found[0].settings.tasks  # no expand_tasks
    expanded = list(w.jobs.list(name="Nightly Sales", expand_tasks=True))
    assert expanded[0].settings is not None and expanded[0].settings.tasks

    job = w.jobs.get(job_id)
    assert job.settings is not None
    assert job.settings.name == "Nightly Sales"
    assert job.settings.max_concurrent_runs == 3
    assert job.settings.queue == QueueSettings(enabled=True)
    assert job.settings.tags == {"team": "data"}
    assert {(p.name, p.default) for p in job.settings.parameters or []} == {
        ("backfill_key", ""),
        ("env", "dev"),
    }
    assert [t.task_key for t in job.settings.tasks or []] == ["main"]

    created = w.jobs.create(name="via-sdk", max_concurrent_runs=2).job_id
    assert created is not None
    created_settings = w.jobs.get(created).settings
    assert created_settings is not None and created_settings.max_concurrent_runs == 2


def test_jobs_list_pages_with_next_page_token(emu: JobsEmulator, w: WorkspaceClient) -> None:
    ids = [emu.create_job(f"job-{i}") for i in range(5)]
    listed = [j.job_id for j in w.jobs.list(limit=2)]
    assert listed == sorted(ids, reverse=True)  # newest first, across 3 pages
    assert emu.requests["/api/2.2/jobs/list"] == 3


def test_run_goes_running_then_terminated_success(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("daily", parameters={"backfill_key": "", "env": "dev"})
    emu.set_outcome("2024-01-01", hold=True)  # RUNNING until released, however slow we are

    waiter = w.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-01"})
    run = w.jobs.get_run(waiter.run_id)
    assert lifecycle(run) == RunLifeCycleState.RUNNING
    assert run.status is not None and run.status.state == RunLifecycleStateV2State.RUNNING
    assert run.end_time == 0 and result(run) is None
    assert emu.release("2024-01-01") == 1

    done = wait_for_run(w, waiter.run_id)
    assert lifecycle(done) == RunLifeCycleState.TERMINATED
    assert result(done) == RunResultState.SUCCESS
    assert done.status is not None and done.status.termination_details is not None
    assert done.status.termination_details.code == TerminationCodeCode.SUCCESS
    assert done.start_time is not None and done.end_time is not None
    assert done.run_id == done.number_in_job == done.original_attempt_run_id == waiter.run_id
    assert done.job_id == job_id
    assert done.run_page_url == f"{emu.url}/?o={emu.workspace_id}#job/{job_id}/run/{done.run_id}"
    params = {p.name: (p.default, p.value) for p in done.job_parameters or []}
    assert params == {"backfill_key": ("", "2024-01-01"), "env": ("dev", "dev")}
    (record,) = emu.runs(job_id)
    assert record.job_parameters == {"backfill_key": "2024-01-01", "env": "dev"}
    assert record.attempt == 1 and record.result_state == "SUCCESS"


def test_run_lasts_exactly_its_duration(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("daily", parameters={"backfill_key": ""})
    emu.set_outcome("2024-01-05", duration=0.3)
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-05"}).run_id
    done = wait_for_run(w, run_id)
    assert done.start_time is not None and done.end_time is not None
    assert 299 <= done.end_time - done.start_time <= 301  # planned, not observed


def test_pending_phase_before_running(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.pending_duration = 3600.0
    stuck = w.jobs.run_now(emu.create_job("pending")).run_id
    assert lifecycle(w.jobs.get_run(stuck)) == RunLifeCycleState.PENDING
    w.jobs.cancel_run(stuck)  # cancelled while PENDING: it never ran
    assert result(w.jobs.get_run(stuck)) == RunResultState.CANCELED
    assert emu.runs()[0].started is None

    emu.pending_duration = 0.15
    emu.hold_runs = True
    run_id = w.jobs.run_now(emu.create_job("pending-then-running")).run_id
    wait_for_run(w, run_id, RunLifeCycleState.RUNNING)  # held: it stays RUNNING
    (_, record) = emu.runs()
    assert record.started is not None and record.admitted is not None
    assert record.started - record.admitted == pytest.approx(0.15)
    emu.release()
    assert result(wait_for_run(w, run_id)) == RunResultState.SUCCESS


def test_per_key_failures(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("flaky", parameters=BACKFILL)
    emu.set_outcome("2024-01-02", fail_attempts=1)
    emu.set_outcome("2024-01-03", result="FAILED", message="table locked")

    def run(key: str) -> Run:
        return wait_for_run(w, w.jobs.run_now(job_id, job_parameters={"backfill_key": key}).run_id)

    first, second = run("2024-01-02"), run("2024-01-02")
    assert result(first) == RunResultState.FAILED
    assert first.state is not None and first.state.state_message
    assert first.status and first.status.termination_details
    assert first.status.termination_details.code == TerminationCodeCode.RUN_EXECUTION_ERROR
    assert result(second) == RunResultState.SUCCESS
    permanent = [run("2024-01-03") for _ in range(2)]
    assert [result(r) for r in permanent] == [RunResultState.FAILED] * 2
    assert permanent[0].state is not None and permanent[0].state.state_message == "table locked"
    assert result(run("2024-01-04")) == RunResultState.SUCCESS  # unscripted key
    assert [(r.outcome_key, r.attempt) for r in emu.runs(job_id)] == [
        ("2024-01-02", 1),
        ("2024-01-02", 2),
        ("2024-01-03", 1),
        ("2024-01-03", 2),
        ("2024-01-04", 1),
    ]


def test_idempotency_token(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("idem", parameters=BACKFILL)
    first = w.jobs.run_now(job_id, idempotency_token="tok-1", job_parameters={"backfill_key": "a"})
    again = w.jobs.run_now(job_id, idempotency_token="tok-1", job_parameters={"backfill_key": "a"})
    assert int(first.run_id) == int(again.run_id)
    assert len(emu.runs(job_id)) == 1
    assert emu.runs(job_id)[0].idempotency_token == "tok-1"
    other = w.jobs.run_now(job_id, idempotency_token="tok-2")
    assert int(other.run_id) != int(first.run_id)
    w.jobs.run_now(job_id, idempotency_token="x" * 64)
    with pytest.raises(InvalidParameterValue, match="64"):
        w.jobs.run_now(job_id, idempotency_token="x" * 65)
    assert len(emu.runs(job_id)) == 3
    # what was meant to start: one body per token; bodies without a token all count
    w.jobs.run_now(job_id)
    w.jobs.run_now(job_id)
    assert len(emu.run_now_bodies(job_id)) == 7
    tokens = [b.get("idempotency_token") for b in emu.launch_bodies(job_id)]
    assert tokens == ["tok-1", "tok-2", "x" * 64, "x" * 65, None, None]


def test_queue_caps_concurrency_fifo(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("capped", parameters=BACKFILL, max_concurrent_runs=2, queue=True)
    keys = [f"k{i}" for i in range(5)]
    for key in keys[:2]:
        emu.set_outcome(key, hold=True)  # both slots busy until released
    run_ids = [w.jobs.run_now(job_id, job_parameters={"backfill_key": k}).run_id for k in keys]
    states = [lifecycle(w.jobs.get_run(r)) for r in run_ids]
    assert states.count(RunLifeCycleState.RUNNING) == 2
    assert states[2:] == [RunLifeCycleState.QUEUED] * 3
    queued = w.jobs.get_run(run_ids[-1])
    assert queued.status is not None and queued.status.queue_details is not None
    active = list(w.jobs.list_runs(job_id=job_id, active_only=True))
    assert len(active) == 5

    emu.release("k0")  # k2, k3, k4 run one after another in the freed slot
    emu.wait_for(lambda runs: runs[4].started is not None, job_id=job_id, what="k4 started")
    emu.release("k1")
    emu.wait_until_idle()
    assert emu.max_concurrency(job_id) == 2
    assert all(result(w.jobs.get_run(r)) == RunResultState.SUCCESS for r in run_ids)
    starts = {run_id: start for start, _, run_id in emu.timeline(job_id)}
    assert [run_id for run_id, _ in sorted(starts.items(), key=lambda kv: kv[1])] == run_ids
    ends = {run_id: end for _, end, run_id in emu.timeline(job_id)}
    assert starts[run_ids[2]] == min(ends[run_ids[0]], ends[run_ids[1]])  # starts as a slot frees
    assert [r.was_queued for r in emu.runs(job_id)] == [False, False, True, True, True]


def test_without_queue_extra_runs_are_skipped(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.hold_runs = True  # the first run keeps the only slot
    job_id = emu.create_job("no-queue", max_concurrent_runs=1, queue=False)
    first = w.jobs.run_now(job_id).run_id
    skipped = w.jobs.get_run(w.jobs.run_now(job_id).run_id)
    assert lifecycle(skipped) == RunLifeCycleState.SKIPPED
    assert result(skipped) == RunResultState.MAXIMUM_CONCURRENT_RUNS_REACHED
    assert skipped.state is not None and "maximum concurrent runs" in (
        skipped.state.state_message or ""
    )
    assert skipped.status is not None and skipped.status.termination_details is not None
    assert (
        skipped.status.termination_details.code == TerminationCodeCode.MAX_CONCURRENT_RUNS_EXCEEDED
    )
    # run-now's own queue setting overrides the job's
    queued = w.jobs.run_now(job_id, queue=QueueSettings(enabled=True)).run_id
    assert lifecycle(w.jobs.get_run(queued)) == RunLifeCycleState.QUEUED
    assert lifecycle(w.jobs.get_run(first)) == RunLifeCycleState.RUNNING
    assert emu.runs(job_id)[1].attempt == 0  # a skipped run never consumed an attempt


def test_cancel_frees_slot(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.hold_runs = True
    job_id = emu.create_job("cancel", max_concurrent_runs=1)
    running, queued = w.jobs.run_now(job_id).run_id, w.jobs.run_now(job_id).run_id
    assert lifecycle(w.jobs.get_run(queued)) == RunLifeCycleState.QUEUED

    w.jobs.cancel_run(running)
    canceled = w.jobs.get_run(running)
    assert lifecycle(canceled) == RunLifeCycleState.TERMINATED
    assert result(canceled) == RunResultState.CANCELED
    assert canceled.state is not None and canceled.state.user_cancelled_or_timedout
    assert lifecycle(w.jobs.get_run(queued)) == RunLifeCycleState.RUNNING  # took the slot

    w.jobs.cancel_run(running)  # finished run: no-op
    assert result(w.jobs.get_run(running)) == RunResultState.CANCELED
    w.jobs.cancel_all_runs(job_id=job_id)
    assert result(w.jobs.get_run(queued)) == RunResultState.CANCELED
    assert emu.max_concurrency(job_id) == 1


def test_runs_list_paging_and_filters(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.hold_runs = True
    job_id = emu.create_job("many", parameters=BACKFILL, max_concurrent_runs=10)
    other = emu.create_job("other")
    run_ids = [
        w.jobs.run_now(job_id, job_parameters={"backfill_key": f"k{i}"}).run_id for i in range(7)
    ]
    w.jobs.run_now(other)
    w.jobs.cancel_run(run_ids[0])

    listed = list(w.jobs.list_runs(job_id=job_id, limit=3))
    # newest first by start time (ties: lowest id first), not by run id
    by_start = sorted(listed, key=lambda r: (-(r.start_time or 0), r.run_id or 0))
    assert [r.run_id for r in listed] == [r.run_id for r in by_start]
    assert sorted(r.run_id or 0 for r in listed) == sorted(run_ids)
    assert emu.requests["/api/2.2/jobs/runs/list"] == 3  # 3 + 3 + 1
    k6 = next(r for r in listed if r.run_id == run_ids[6])
    assert [p.value for p in k6.job_parameters or []] == ["k6"]
    assert not listed[0].tasks

    assert len(list(w.jobs.list_runs(job_id=job_id, active_only=True))) == 6
    completed = list(w.jobs.list_runs(job_id=job_id, completed_only=True))
    assert [r.run_id for r in completed] == [run_ids[0]]
    assert len(list(w.jobs.list_runs())) == 8  # all jobs
    first_page = w.jobs.list_runs(job_id=job_id, offset=5, limit=25)
    assert [r.run_id for r in first_page] == [r.run_id for r in listed[5:]]
    start = listed[-1].start_time
    assert start is not None
    started_by = sum(1 for r in listed if (r.start_time or 0) <= start)  # 1 unless a tie
    assert len(list(w.jobs.list_runs(job_id=job_id, start_time_to=start))) == started_by
    with pytest.raises(InvalidParameterValue):
        list(w.jobs.list_runs(job_id=job_id, limit=26))
    with pytest.raises(InvalidParameterValue):
        list(w.jobs.list_runs(active_only=True, completed_only=True))
    w.jobs.cancel_all_runs(job_id=job_id)
    w.jobs.cancel_all_runs(job_id=other)


def test_unknown_ids_raise_typed_errors(emu: JobsEmulator, w: WorkspaceClient) -> None:
    with pytest.raises(ResourceDoesNotExist, match="Job 424242 does not exist"):
        w.jobs.get(424242)
    with pytest.raises(NotFound):
        w.jobs.get_run(777)
    with pytest.raises(InvalidParameterValue, match="Job 424242 does not exist"):
        w.jobs.run_now(424242)
    with pytest.raises(InvalidParameterValue):
        w.jobs.cancel_run(777)
    with pytest.raises(InvalidParameterValue):
        list(w.jobs.list_runs(job_id=424242))


def test_token_is_checked_when_configured() -> None:
    with JobsEmulator(token="s3cret") as emu:
        assert list(emu.workspace_client().jobs.list()) == []
        bad = WorkspaceClient(host=emu.url, token="wrong", auth_type="pat")
        with pytest.raises(Unauthenticated):
            list(bad.jobs.list())


def test_sdk_retries_through_throttling(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("throttled", parameters=BACKFILL, max_concurrent_runs=5)
    # Retry-After: 0 -> the SDK sleeps only its 0-1 s jitter per retry.
    emu.set_faults(error_rate=0.3, retry_after=0.0, seed=3)
    run_ids = [
        w.jobs.run_now(
            job_id, job_parameters={"backfill_key": f"k{i}"}, idempotency_token=f"t{i}"
        ).run_id
        for i in range(3)
    ]
    runs = [w.jobs.get_run(r) for r in run_ids]
    assert [r.run_id for r in runs] == run_ids
    assert len(list(w.jobs.list_runs(job_id=job_id))) == 3
    emu.set_faults()

    assert len(emu.runs(job_id)) == 3
    assert emu.faults["total"] >= 1
    assert emu.faults["total"] == emu.faults["429"] + emu.faults["503"]
    answered = 3 + 3 + 1 + 1  # run-now, runs/get, runs/list, /.well-known
    assert emu.requests["total"] == answered + emu.faults["total"]
    run_now_faults = emu.faults[f"429 {RUN_NOW}"] + emu.faults[f"503 {RUN_NOW}"]
    assert emu.requests[RUN_NOW] == 3 + run_now_faults


def test_dropped_connections_and_idempotency(emu: JobsEmulator, w: WorkspaceClient) -> None:
    lost_request = emu.create_job("lost-request")
    lost_response = emu.create_job("lost-response")
    lost_response_no_token = emu.create_job("lost-response-no-token")
    emu.inject_fault(RUN_NOW, kind="drop_before", job_id=lost_request)
    emu.inject_fault(RUN_NOW, kind="drop_after", job_id=lost_response)
    emu.inject_fault(RUN_NOW, kind="drop_after", job_id=lost_response_no_token)
    returned: dict[int, int] = {}

    def trigger(job_id: int, token: str | None) -> None:
        returned[job_id] = w.jobs.run_now(job_id, idempotency_token=token).run_id

    # The SDK sleeps 1-2 s before retrying a dropped connection: run the three in parallel.
    threads = [
        threading.Thread(target=trigger, args=(lost_request, "req-1")),
        threading.Thread(target=trigger, args=(lost_response, "resp-1")),
        threading.Thread(target=trigger, args=(lost_response_no_token, None)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(returned) == 3

    assert [r.run_id for r in emu.runs(lost_request)] == [returned[lost_request]]
    assert [r.run_id for r in emu.runs(lost_response)] == [returned[lost_response]]
    duplicated = emu.runs(lost_response_no_token)  # the SDK retried the POST blindly
    assert len(duplicated) == 2 and duplicated[1].run_id == returned[lost_response_no_token]
    assert emu.faults["drop_before"] == 1 and emu.faults["drop_after"] == 2
    assert emu.requests[RUN_NOW] == 6


def test_current_user_me_answers_the_emulator_user() -> None:
    with JobsEmulator(user_name="jane.doe@example.com") as emulator:
        me = emulator.workspace_client().current_user.me()
    assert me.user_name == "jane.doe@example.com"
