"""Estimates before launch: past runs from the Jobs API emulator and local ledgers,
compute from job settings, and the arithmetic (rounds x median, scaled by keys)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.estimate.estimate import (
    Compute,
    PastRun,
    compute_of_definition,
    compute_of_job,
    compute_of_settings,
    estimate,
    format_seconds,
    past_runs_databricks,
    past_runs_local,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS

DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
CLUSTER = {"spark_version": "16.4.x-scala2.12", "node_type_id": "i3.xlarge", "num_workers": 2}
CLOCK_SLACK = 0.005  # the API reports whole milliseconds


def plan_of(runs: int, *, batch: int = 1, final_sync: bool = False) -> BackfillPlan:
    """A plan of ``runs`` runs of ``batch`` made-up keys each."""
    slices = [Slice(i, tuple(f"k{i}-{j}" for j in range(batch))) for i in range(runs)]
    if final_sync:
        slices.append(Slice(runs, ()))
    return BackfillPlan("nightly", tuple(slices))


def history(*seconds: float, keys: int = 1, state: str = "succeeded") -> list[PastRun]:
    """Finished runs lasting ``seconds``, the first one the newest."""
    return [
        PastRun(1000.0 - i, 1000.0 - i + s, keys, state)  # type: ignore[arg-type]
        for i, s in enumerate(seconds)
    ]


# -- past runs from the Jobs API ---------------------------------------------------------


def test_past_runs_take_times_and_keys_from_the_api(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    emu.set_outcome("2024-01-01", duration=0.05)
    emu.set_outcome("2024-01-02", duration=0.03, fail_attempts=1)
    emu.set_outcome("2024-01-05", duration=0.04)
    client = emu.workspace_client()
    for params in (
        {"backfill_key": "2024-01-01"},
        {"backfill_key": "2024-01-02"},
        {"backfill_key": "2024-01-05", "backfill_start_key": "2024-01-03"},
    ):
        client.jobs.run_now(job_id, job_parameters=params)
    emu.wait_until_idle()

    runs = past_runs_databricks(client, job_id, DAILY)

    records = emu.runs(job_id)[::-1]  # newest first, like the API
    assert [(r.keys, r.state) for r in runs] == [(3, "succeeded"), (1, "failed"), (1, "succeeded")]
    for run, record in zip(runs, records, strict=True):
        assert record.started is not None and record.ended is not None
        assert run.seconds == pytest.approx(record.ended - record.started, abs=CLOCK_SLACK)


def test_time_spent_queued_is_not_part_of_a_run(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=1)
    emu.set_outcome("2024-01-01", duration=0.1)
    emu.set_outcome("2024-01-02", duration=0.02)
    client = emu.workspace_client()
    for key in ("2024-01-01", "2024-01-02"):
        client.jobs.run_now(job_id, job_parameters={"backfill_key": key})
    emu.wait_until_idle()

    newest = past_runs_databricks(client, job_id, DAILY)[0]

    queued = emu.runs(job_id)[1]
    assert queued.was_queued and queued.started is not None and queued.ended is not None
    assert newest.seconds == pytest.approx(queued.ended - queued.started, abs=CLOCK_SLACK)
    assert newest.seconds < queued.ended - queued.created - 0.05


def test_only_finished_runs_count_up_to_the_limit_across_pages(emu: JobsEmulator) -> None:
    job_id = emu.create_job("plain", max_concurrent_runs=40)
    client = emu.workspace_client()
    for _ in range(30):
        client.jobs.run_now(job_id)
    emu.wait_until_idle()
    emu.set_outcome("2024-03-01", hold=True)
    client.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-03-01"})

    capped = past_runs_databricks(client, job_id, None, limit=27)
    every = past_runs_databricks(client, job_id, None)

    assert len(capped) == 27  # two pages of the API's 25
    assert len(every) == 30  # the held run is still running: not counted
    assert {(r.keys, r.state) for r in every} == {(1, "succeeded")}
    assert [r.started for r in every] == sorted((r.started for r in every), reverse=True)
    emu.release()


def test_no_history_is_said_plainly(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS)
    client = emu.workspace_client()

    assert past_runs_databricks(client, job_id, DAILY) == []
    found = estimate(plan_of(5), [], max_concurrent=2, compute=None)
    assert found.lines() == ["estimate: no finished runs of nightly to estimate from"]
    assert found.to_json()["wall_seconds"] is None

    emu.set_outcome("2024-01-01", fail_attempts=5)
    for _ in range(2):
        client.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-01"})
    emu.wait_until_idle()
    failed = estimate(
        plan_of(5), past_runs_databricks(client, job_id, DAILY), max_concurrent=2, compute=None
    )
    assert failed.lines() == [
        "estimate: no successful runs of nightly among its last 2 finished runs to estimate from"
    ]


def test_estimate_from_emulated_history_uses_their_median(emu: JobsEmulator) -> None:
    settings = {
        "job_clusters": [{"job_cluster_key": "small", "new_cluster": CLUSTER}],
        "tasks": [{"task_key": "load", "job_cluster_key": "small"}],
    }
    job_id = emu.create_job(
        "nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=5, settings=settings
    )
    client = emu.workspace_client()
    for day, seconds in zip(range(1, 6), (0.02, 0.06, 0.04, 0.08, 0.1), strict=True):
        emu.set_outcome(f"2024-01-0{day}", duration=seconds)
        client.jobs.run_now(job_id, job_parameters={"backfill_key": f"2024-01-0{day}"})
    emu.wait_until_idle()

    compute = compute_of_job(client, job_id)
    found = estimate(
        plan_of(9), past_runs_databricks(client, job_id, DAILY), max_concurrent=4, compute=compute
    )

    assert found.sample == 5
    assert found.median_seconds == pytest.approx(0.06, abs=CLOCK_SLACK)
    assert found.p90_seconds == pytest.approx(0.1, abs=CLOCK_SLACK)
    assert found.rounds == 3
    assert found.wall_seconds == pytest.approx(3 * found.median_seconds)
    assert compute == Compute("job_cluster", "job cluster small: 2 x i3.xlarge + driver", (3, 3))
    assert "node hours (job cluster small: 2 x i3.xlarge + driver)" in found.lines()[1]


# -- compute -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(
            {
                "job_clusters": [
                    {
                        "job_cluster_key": "big",
                        "new_cluster": {
                            "node_type_id": "r5.xlarge",
                            "driver_node_type_id": "r5.2xlarge",
                            "autoscale": {"min_workers": 2, "max_workers": 8},
                        },
                    },
                    {"job_cluster_key": "unused", "new_cluster": CLUSTER},
                ],
                "tasks": [{"task_key": "a", "job_cluster_key": "big"}],
            },
            Compute(
                "job_cluster",
                "job cluster big: 2-8 (autoscale) x r5.xlarge + driver r5.2xlarge",
                (3, 9),
            ),
            id="autoscale-unused-cluster-ignored",
        ),
        pytest.param(
            {
                "environments": [{"environment_key": "default", "spec": {}}],
                "tasks": [{"task_key": "a", "environment_key": "default"}],
            },
            Compute("serverless", "serverless"),
            id="serverless",
        ),
        pytest.param(
            {"tasks": [{"task_key": "a", "existing_cluster_id": "0101-abc"}]},
            Compute("existing_cluster", "existing cluster 0101-abc"),
            id="all-purpose",
        ),
        pytest.param(
            {
                "tasks": [
                    {"task_key": "a", "new_cluster": {"node_type_id": "m5.large"}},
                    {"task_key": "b", "environment_key": "default"},
                ]
            },
            Compute("mixed", "task a cluster: single node m5.large; serverless"),
            id="mixed",
        ),
        pytest.param({}, Compute("unknown", "unknown"), id="nothing-known"),
    ],
)
def test_compute_from_job_settings(settings: dict[str, object], expected: Compute) -> None:
    assert compute_of_settings(settings) == expected


def test_compute_of_a_deployed_job_and_of_a_definition(emu: JobsEmulator) -> None:
    serverless = emu.create_job(
        "nightly",
        settings={
            "environments": [{"environment_key": "default", "spec": {"environment_version": "2"}}],
            "tasks": [{"task_key": "load", "environment_key": "default"}],
        },
    )
    assert compute_of_job(emu.workspace_client(), serverless).kind == "serverless"

    from databricks_bundle_decorators import Registry, job, job_cluster, task

    registry = Registry()

    @task
    def load() -> None: ...

    @job(cluster=job_cluster("small", **CLUSTER), registry=registry)
    def classic() -> None:
        load()

    @job(registry=registry)
    def lean() -> None:
        load()

    assert compute_of_definition(classic).nodes == (3, 3)
    assert compute_of_definition(lean) == Compute("serverless", "serverless")


# -- local ledgers ---------------------------------------------------------------------


def test_past_runs_local_reads_finished_attempts_of_local_ledgers(tmp_path: Path) -> None:
    plan = BackfillPlan("nightly", (Slice(0, ("a",)), Slice(1, ("b", "c")), Slice(2, ("d",))))
    local = Ledger.create(tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions())
    done = Attempt(1, "t1", "succeeded", submitted_at=100.0, ended_at=130.0)
    local.update(local.slices[0].with_attempt(done))
    local.update(local.slices[1].with_attempt(Attempt(1, "t2", "failed", None, None, 90.0, 95.0)))
    local.update(local.slices[2].with_attempt(Attempt(1, "t3", "running", submitted_at=140.0)))
    local.save()
    remote = Ledger.create(
        tmp_path, plan, backend=BackendSpec("databricks", 7), options=LaunchOptions()
    )
    remote.update(remote.slices[0].with_attempt(done))
    remote.save()

    assert past_runs_local(tmp_path, "nightly") == [
        PastRun(100.0, 130.0, 1, "succeeded"),
        PastRun(90.0, 95.0, 2, "failed"),
    ]
    assert past_runs_local(tmp_path, "other") == []


# -- the estimate ----------------------------------------------------------------------


def test_lines_state_the_numbers_used() -> None:
    runs = history(*([372.0] * 20 + [543.0] * 5))
    compute = Compute("job_cluster", "job cluster small: 2 x i3.xlarge + driver", (3, 3))

    found = estimate(plan_of(40), runs, max_concurrent=4, compute=compute)

    assert found.lines() == [
        "estimate: 40 runs, 4 at once -> 10 rounds x median 6m12s (p90 9m03s) of the last 25 "
        "successful runs = ~1h02m wall time (p90 ~1h30m)",
        "  ~12.4 node hours (job cluster small: 2 x i3.xlarge + driver); multiply by your node "
        "type's DBU rate, or give a DBU/h per run for a DBU figure",
    ]
    rated = estimate(plan_of(40), runs, max_concurrent=4, compute=compute, dbu_per_hour=0.75)
    assert rated.lines()[1] == (
        "  ~3.1 DBU at 0.75 DBU/h per run (job cluster small: 2 x i3.xlarge + driver)"
    )
    assert json.loads(json.dumps(rated.to_json()))["dbu"] == pytest.approx(40 * 372 / 3600 * 0.75)


def test_only_the_latest_successful_runs_are_sampled() -> None:
    old = [PastRun(0.0, 9999.0, 1, "succeeded")]
    runs = history(*([60.0] * 25), state="succeeded") + history(1.0, state="failed") + old
    found = estimate(plan_of(1), runs, max_concurrent=1, compute=None)
    assert (found.sample, found.finished, found.median_seconds) == (25, 27, 60.0)


def test_batches_scale_with_keys_and_final_sync_adds_a_round() -> None:
    found = estimate(
        plan_of(10, batch=7, final_sync=True),
        history(100.0, 100.0),
        max_concurrent=4,
        compute=Compute("serverless", "serverless"),
    )
    assert found.rounds == 4
    assert found.wall_seconds == 3 * 700.0 + 100.0
    assert found.lines() == [
        "estimate: 10 runs, 4 at once -> 3 rounds (+1 for the final sync) x median 1m40s "
        "(p90 1m40s) of the last 2 successful runs = ~36m40s wall time",
        "  assumes a run's time grows with its keys: 7 keys per run here, 1 in those past runs "
        "(x7)",
        "  DBU not estimated for serverless: serverless compute has no node count to multiply; "
        "--dbu-per-hour RATE gives a DBU figure",
    ]


def test_nothing_to_run() -> None:
    found = estimate(plan_of(0), history(5.0), max_concurrent=3, compute=None)
    assert found.lines() == ["estimate: nothing to run"]
    assert found.wall_seconds == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"max_concurrent": 0}, "--max-concurrent must be at least 1, got 0", id="cap"),
        pytest.param(
            {"max_concurrent": 2, "dbu_per_hour": -1.0},
            "--dbu-per-hour must be a positive number, got -1",
            id="rate",
        ),
    ],
)
def test_bad_input_is_one_clear_error(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        estimate(plan_of(3), [], compute=None, **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(4.23, "4.2s"), (372.0, "6m12s"), (3720.0, "1h02m"), (90000.0, "25h00m")],
    ids=["seconds", "minutes", "hours", "over-a-day"],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


durations = st.lists(st.floats(1.0, 1e5), min_size=1, max_size=40)


@given(runs=st.integers(0, 300), extra=st.integers(1, 50), cap=st.integers(1, 64), d=durations)
def test_wall_time_never_falls_as_runs_are_added(
    runs: int, extra: int, cap: int, d: list[float]
) -> None:
    fewer = estimate(plan_of(runs), history(*d), max_concurrent=cap, compute=None)
    more = estimate(plan_of(runs + extra), history(*d), max_concurrent=cap, compute=None)
    assert more.wall_seconds >= fewer.wall_seconds
    assert more.run_hours >= fewer.run_hours


@given(
    runs=st.integers(1, 300),
    cap=st.integers(1, 64),
    batch=st.integers(1, 10),
    keys=st.integers(1, 10),
    d=durations,
)
def test_wall_time_is_between_one_run_and_all_runs_in_a_row(
    runs: int, cap: int, batch: int, keys: int, d: list[float]
) -> None:
    found = estimate(
        plan_of(runs, batch=batch), history(*d, keys=keys), max_concurrent=cap, compute=None
    )
    one_run = found.median_seconds * batch / keys
    assert one_run * (1 - 1e-9) <= found.wall_seconds <= runs * one_run * (1 + 1e-9)
    assert found.wall_p90_seconds >= found.wall_seconds
    if batch >= keys:
        assert found.wall_seconds >= found.median_seconds * (1 - 1e-9)


@given(runs=st.integers(1, 300), cap=st.integers(1, 63), d=durations)
def test_more_concurrency_never_takes_longer(runs: int, cap: int, d: list[float]) -> None:
    slower = estimate(plan_of(runs), history(*d), max_concurrent=cap, compute=None)
    faster = estimate(plan_of(runs), history(*d), max_concurrent=cap + 1, compute=None)
    assert faster.wall_seconds <= slower.wall_seconds
    assert faster.run_hours == slower.run_hours
