"""``--retries N --retry-for DURATION``: the budget decision (properties) and the
scheduler driving the real WorkspaceClient against the Jobs API emulator, its clock
passed in so the time budget is spent by arguments, never by waiting."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
    rerun_command,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.policy.retry_budget import (
    RetryBudget,
    decide,
    format_duration,
)
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.interrupts import Interrupts
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.launch.run.summary import summarize
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS, keys_of
from .test_scheduler import EventSignals

KEYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


class RunClock:
    """Monotonic seconds that move on by ``run_seconds`` whenever a run is submitted:
    every run "takes" that long, as seen by the retry budgets."""

    def __init__(self, run_seconds: float) -> None:
        self.now = 1000.0
        self.run_seconds = run_seconds

    def __call__(self) -> float:
        return self.now

    def see(self, event: LaunchEvent) -> None:
        if event.kind == "submitted":
            self.now += self.run_seconds


def make_ledger(root: Path, keys: list[str], options: LaunchOptions) -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (k,)) for i, k in enumerate(keys)))
    return Ledger.create(root, plan, backend=BackendSpec("databricks", 1), options=options)


def scheduler(
    emu: JobsEmulator,
    ledger: Ledger,
    job_id: int,
    *,
    clock: RunClock | None = None,
    events: EventSignals | None = None,
    interrupts: Interrupts | None = None,
    **options: object,
) -> Scheduler:
    opts = LaunchOptions(
        **{"poll_interval": 0.01, "max_poll_interval": 0.1, "retry_delay": 0.01, **options}  # type: ignore[arg-type]
    )
    sink = events or EventSignals()

    def emit(event: LaunchEvent) -> None:
        if clock is not None:
            clock.see(event)
        sink.append(event)

    backend = DatabricksBackend(emu.workspace_client(), job_id)
    tick = clock or time.monotonic
    return Scheduler(backend, ledger, opts, emit=emit, interrupts=interrupts, clock=tick)


# -- the decision ----------------------------------------------------------------------

budgets = st.builds(
    RetryBudget,
    retries=st.integers(0, 20),
    retry_for=st.none() | st.floats(0.5, 86_400.0),
)


@given(
    budgets,
    st.integers(1, 30),
    st.floats(0.0, 100_000.0),
    st.floats(0.0, 3600.0),
)
def test_retries_exactly_while_both_budgets_remain(
    budget: RetryBudget, failures: int, elapsed: float, delay: float
) -> None:
    decision = decide(budget, failures=failures, elapsed=elapsed, delay=delay)

    retries_left = failures <= budget.retries  # failures - 1 retries done so far
    time_left = budget.retry_for is None or elapsed + delay < budget.retry_for
    assert decision.retry == (retries_left and time_left)
    if decision.retry:
        assert decision.spent == "" and decision.delay == delay
    elif not retries_left:  # never past N retries, and the message says so
        assert (decision.spent == "") == (budget.retries == 0)
        assert decision.spent in ("", f"retries spent: {budget.retries} of {budget.retries}")
    else:  # never a retry that would start past the time budget
        assert budget.retry_for is not None
        assert decision.spent.startswith("retry time spent: ")
        assert decision.spent.endswith(f"of {format_duration(budget.retry_for)}") == (
            elapsed >= budget.retry_for
        )


def test_the_back_off_must_fit_inside_the_time_budget() -> None:
    budget = RetryBudget(retries=5, retry_for=600.0)

    assert decide(budget, failures=1, elapsed=570.0, delay=20.0).retry
    late = decide(budget, failures=1, elapsed=590.0, delay=20.0)
    assert not late.retry
    assert late.spent == (
        "retry time spent: 9m50s of 10m (the retry after a 20s back-off would start past it)"
    )
    assert decide(budget, failures=1, elapsed=600.0, delay=0.0).spent == (
        "retry time spent: 10m of 10m"
    )


# -- the scheduler against the emulator ------------------------------------------------


def test_a_slice_that_keeps_failing_stops_after_n_retries(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.set_outcome(KEYS[1], result="FAILED", message="boom")
    ledger = make_ledger(root, KEYS, LaunchOptions(retries=3))
    clock = RunClock(run_seconds=60.0)  # 4 runs: 4 minutes, far inside --retry-for 1h

    state = scheduler(emu, ledger, job_id, clock=clock, retries=3, retry_for=3600.0).run()

    assert state == "failed"
    assert keys_of(emu, job_id).count(KEYS[1]) == 4  # the first attempt and 3 retries
    saved = read_ledger(ledger.path)
    record = saved.slices[1]
    assert [a.state for a in record.attempts] == ["failed"] * 4
    assert [a.gave_up for a in record.attempts] == ["", "", "", "retries spent: 3 of 3"]
    assert [r.state for r in saved.slices] == ["succeeded", "failed", "succeeded"]
    (failed,) = summarize(saved, 1.0).failed
    assert failed.reason.endswith("boom; retries spent: 3 of 3")


def test_the_time_budget_stops_retries_although_retries_remain(
    emu: JobsEmulator, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.set_outcome(KEYS[0], result="FAILED", message="boom")
    ledger = make_ledger(root, KEYS[:1], LaunchOptions(retries=10, retry_for=600.0))
    clock = RunClock(run_seconds=240.0)  # each run fails after 4 minutes
    events = EventSignals()

    state = scheduler(
        emu, ledger, job_id, clock=clock, events=events, retries=10, retry_for=600.0
    ).run()

    # Runs start at 0, 4m and 8m; the third fails at 12m, past --retry-for 10m, with
    # 8 of its 10 retries left.
    assert state == "failed"
    assert keys_of(emu, job_id) == [KEYS[0]] * 3
    record = read_ledger(ledger.path).slices[0]
    assert record.attempts[-1].gave_up == "retry time spent: 12m of 10m"
    assert [e.kind for e in events.events].count("retrying") == 2
    (failed,) = [e for e in events.events if e.kind == "failed"]
    assert failed.message.endswith("; retry time spent: 12m of 10m")


def test_a_slice_waiting_for_its_retry_holds_no_slot(emu: JobsEmulator, root: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=100)
    emu.set_outcome(KEYS[0], fail_attempts=1)
    emu.set_outcome(KEYS[1], hold=True)
    ledger = make_ledger(root, KEYS[:2], LaunchOptions(max_concurrent=1, retries=1))
    events, interrupts = EventSignals(), Interrupts()
    run = scheduler(
        emu,
        ledger,
        job_id,
        events=events,
        interrupts=interrupts,
        max_concurrent=1,
        retries=1,
        retry_delay=3600.0,  # the retry is an hour away: only a free slot lets B run now
    )

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(run.run)
        try:
            events.wait("retrying")
            emu.wait_for(
                lambda runs: (
                    [r.job_parameters["backfill_key"] for r in runs if r.active] == [KEYS[1]]
                ),
                job_id=job_id,
                what="the next key running in the only slot during the back-off",
            )
            interrupts.escalate()  # drain: the hour-long back-off is not waited for
        finally:
            emu.release()
        assert result.result(timeout=120) == "interrupted"

    assert keys_of(emu, job_id) == [KEYS[0], KEYS[1]]
    assert emu.max_concurrency(job_id) == 1
    first = read_ledger(ledger.path).slices[0]
    assert [a.state for a in first.attempts] == ["failed"]
    assert first.attempts[0].gave_up == ""  # the drain stopped it, not a budget


# -- the ledger --------------------------------------------------------------------------


def test_the_ledger_keeps_both_budgets(root: Path) -> None:
    ledger = make_ledger(root, KEYS, LaunchOptions(retries=3, retry_for=600.0))
    ledger.save()

    saved = read_ledger(ledger.path)
    assert (saved.options.retries, saved.options.retry_for) == (3, 600.0)
    scheduled = replace(saved.options, poll_interval=1.0)
    assert (scheduled.retries, scheduled.retry_for) == (3, 600.0)
    assert "--retries 3 --retry-for 600s" in rerun_command(saved, ["2024-01-02"])
