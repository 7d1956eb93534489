"""The batched poll is right for any order ``runs/list`` may use: start time, end time or
neither (the emulator's ``unordered``), and its requests follow what ended.

Each test drives ``DatabricksBackend.poll()`` directly, counting polls: runs are held
RUNNING in the emulator and released (ended) between two polls, so "the first poll after
a run ended" is an event, not a time. Run ids are opaque (never promised to grow with
time), so the emulator is told which id a run gets where the scenario needs one lower.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.backends.backends import SubmitRequest
from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS

LIST = "/api/2.2/jobs/runs/list"
GET = "/api/2.2/jobs/runs/get"
ORDERS = ["end_time", "start_time", "unordered"]
POLLS_AFTER_END = 5


@pytest.fixture(params=ORDERS)
def ordered_emu(request: pytest.FixtureRequest) -> Iterator[JobsEmulator]:
    with JobsEmulator() as emulator:
        emulator.runs_list_order = request.param
        yield emulator


def submit(
    backend: DatabricksBackend, emu: JobsEmulator, key: str, run_id: int | None = None
) -> str:
    """Submit a held run of ``key`` (that gets id ``run_id``, if given)."""
    emu.set_outcome(key, hold=True)
    if run_id is not None:
        emu.set_next_run_id(run_id)
    request = SubmitRequest(f"tok-{key}", {**BACKFILL_PARAMS, "backfill_key": key}, key)
    got = backend.submit(request).run_id
    assert run_id is None or got == str(run_id)
    return got


def foreign_run(emu: JobsEmulator, job_id: int, key: str, run_id: int) -> str:
    """A held run of the job that this backfill did not launch (someone's manual run)."""
    emu.set_outcome(key, hold=True)
    emu.set_next_run_id(run_id)
    run = emu.workspace_client().jobs.run_now(job_id, job_parameters={"backfill_key": key})
    return str(run.run_id)


def polls_until_reported(
    backend: DatabricksBackend, in_flight: set[str], wanted: set[str]
) -> dict[str, int | None]:
    """Poll up to :data:`POLLS_AFTER_END` times; on which poll (1-based) each of ``wanted``
    was first reported (``None``: still running after them all)."""
    reported: dict[str, int | None] = dict.fromkeys(wanted)
    for poll in range(1, POLLS_AFTER_END + 1):
        for run_id in backend.poll(sorted(in_flight)):
            in_flight.discard(run_id)
            if run_id in reported and reported[run_id] is None:
                reported[run_id] = poll
    return reported


def test_two_runs_ending_between_two_polls_older_listed_first(ordered_emu: JobsEmulator) -> None:
    emu = ordered_emu
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=3600)
    b = submit(backend, emu, "b", 20001)
    a = submit(backend, emu, "a", 4001)  # A: lower id, started after B
    in_flight = {a, b}
    assert backend.poll(sorted(in_flight)) == {}  # poll n: both running
    assert backend.poll(sorted(in_flight)) == {}
    emu.release("b")
    emu.release("a")  # A ends last: first by end time; started last: first by start time
    ends = [r for r in emu.runs(job_id) if r.ended is not None]
    assert {str(r.run_id) for r in ends} == {a, b}
    emu.requests.clear()

    assert polls_until_reported(backend, in_flight, {a, b}) == {a: 1, b: 1}  # poll n + 1
    # poll n + 1: the active page (empty) and one completed page; then nothing to ask
    assert (emu.requests[LIST], emu.requests[GET]) == (2, 0)


def test_a_foreign_run_with_a_lower_id_ending_after_ours(ordered_emu: JobsEmulator) -> None:
    emu = ordered_emu
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=3600)
    b = submit(backend, emu, "b", 20001)
    foreign = foreign_run(emu, job_id, "manual", 4001)  # lower id, started after B
    in_flight = {b}
    assert backend.poll([b]) == {}
    emu.release("b")
    emu.release("manual")  # ends after B
    emu.requests.clear()

    assert polls_until_reported(backend, in_flight, {b}) == {b: 1}
    # poll n + 1: the active page, then B (alone to have left it) looked up
    assert (emu.requests[LIST], emu.requests[GET]) == (1, 1)
    assert foreign not in backend.poll([b])  # nobody asked about it


def test_many_runs_ending_at_once_are_read_from_completed_pages(
    ordered_emu: JobsEmulator,
) -> None:
    emu = ordered_emu
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=200)
    backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=0)
    slow = submit(backend, emu, "slow", 90001)  # listed after the others at equal times
    quick = [submit(backend, emu, "k0", 6001)]
    quick += [submit(backend, emu, f"k{i}") for i in range(1, 120)]
    emu.requests.clear()
    assert backend.poll([slow, *quick]) == {}
    assert emu.requests[LIST] == 5  # 121 active runs: five pages
    emu.release("slow")
    emu.release()  # then every other run: 120 runs ended after it
    emu.requests.clear()
    reported = polls_until_reported(backend, {slow, *quick}, {slow, *quick})

    assert set(reported.values()) == {1}
    # poll 1: the active page (empty), then the 121 runs' five completed pages (started
    # since the oldest of them, in any order); polls 2-5 have nothing left to ask
    assert (emu.requests[LIST], emu.requests[GET]) == (6, 0)


def test_a_run_no_page_lists_is_looked_up_once_per_straggler_interval(
    emu: JobsEmulator,
) -> None:
    ours = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    other = emu.create_job("other", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    elsewhere = DatabricksBackend(emu.workspace_client(), other)
    lost = submit(elsewhere, emu, "lost")  # active, but never on a page of this job
    for interval, gets in ((3600, 1), (0, 3)):
        backend = DatabricksBackend(emu.workspace_client(), ours, straggler_interval=interval)
        emu.requests.clear()
        for _ in range(3):
            assert backend.poll([lost]) == {}
        assert (emu.requests[LIST], emu.requests[GET]) == (3, gets)
    emu.release("lost")
    assert backend.poll([lost])[lost].state == "succeeded"  # the next poll after its end


@pytest.mark.parametrize("skew_s", [-600.0, 600.0])
def test_the_workspace_clock_may_differ_from_ours(emu: JobsEmulator, skew_s: float) -> None:
    emu.set_clock_offset(skew_s)
    emu.runs_list_order = "end_time"
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=3600)
    first = submit(backend, emu, "first")
    assert backend.poll([first]) == {}
    runs = [submit(backend, emu, f"k{i}") for i in range(3)]
    in_flight = {first, *runs}
    assert backend.poll(sorted(in_flight)) == {}
    emu.release()
    emu.requests.clear()

    assert set(polls_until_reported(backend, in_flight, in_flight).values()) == {1}
    # start times come from the workspace's own pages: no clock of ours bounds a page
    assert emu.requests[GET] == 0


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[str, list[int], list[bool], list[int]]:
    """(list order, id rank of each run in submission order, which are ours, the poll
    round after which each run ends)."""
    count = draw(st.integers(2, 9))
    ranks = draw(st.permutations(range(count)))
    ours = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    ends = draw(st.lists(st.integers(0, 4), min_size=count, max_size=count))
    return draw(st.sampled_from(ORDERS)), list(ranks), ours, ends


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios())
def test_every_run_that_ended_is_reported_by_the_next_poll(
    scenario: tuple[str, list[int], list[bool], list[int]],
) -> None:
    order, ranks, ours, ends = scenario
    with JobsEmulator() as emu:
        emu.runs_list_order = order
        job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=20)
        backend = DatabricksBackend(emu.workspace_client(), job_id, straggler_interval=3600)
        keys = [f"k{i}" for i in range(len(ranks))]
        ids: list[str] = []
        for key, rank, mine in zip(keys, ranks, ours, strict=True):
            run_id = 100_000 + 10_000 * rank  # ids in any order against submission
            if mine:
                ids.append(submit(backend, emu, key, run_id))
            else:
                ids.append(foreign_run(emu, job_id, key, run_id))
        in_flight = {run for run, mine in zip(ids, ours, strict=True) if mine}
        for round_ in range(5):
            ended_now = {
                run
                for run, key, end in zip(ids, keys, ends, strict=True)
                if end == round_ and emu.release(key) and run in in_flight
            }
            reported = set(backend.poll(sorted(in_flight)))
            assert reported == ended_now, f"round {round_}"
            in_flight -= reported
