"""Status polls: paced by the policy, a slow poll overtaken, starts never closer than
the rate floor."""

from __future__ import annotations

import math
import threading

from databricks_bundle_decorators.launch.backends.backends import RunStatus
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.policy.poll_policy import StatusPoller

OPTIONS = LaunchOptions(poll_interval=1.0, max_poll_interval=15.0)


class HeldPolls:
    """A backend poll that answers only when released."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()

    def __call__(self, run_ids: list[str]) -> dict[str, RunStatus]:
        self.calls.append(run_ids)
        self.release.wait()
        return {run_id: RunStatus("succeeded") for run_id in run_ids}


def test_a_slow_poll_is_overtaken_and_starts_stay_the_floor_apart() -> None:
    held = HeldPolls()
    poller = StatusPoller(held, OPTIONS, wake=lambda: None)
    try:
        poller.start(["1"], 0.0)
        assert poller.in_flight == 1
        assert poller.due_at() == 0.03  # twice the floor: nothing is known of latencies
        poller.start(["1"], 0.025)
        assert poller.in_flight == 1
        for now in (0.03, 0.125, 0.2):
            poller.start(["1"], now)
        assert poller.in_flight == 4
        assert poller.due_at() == math.inf  # four in flight: wait for an answer
        poller.start(["1"], 100.0)
        assert poller.in_flight == 4
    finally:
        held.release.set()
        poller.close()


def test_answers_are_harvested_and_the_next_poll_planned_from_the_runs_in_flight() -> None:
    held = HeldPolls()
    held.release.set()
    woken = threading.Event()
    poller = StatusPoller(held, OPTIONS, wake=woken.set)
    try:
        assert poller.harvest(0.0) == []
        poller.start([], 0.0)  # nothing in flight: no poll
        assert poller.in_flight == 0
        poller.start(["7", "8"], 0.0)
        assert woken.wait(10)
        answered = poller.harvest(0.01)
        assert [sorted(f.result()) for f in answered] == [["7", "8"]]
        for _ in range(10):
            poller.pacer.record(10.0)  # runs take about 10 s: expected end 8 s after start
        poller.plan(0.01, starts=[0.0])
        assert poller.due_at() == 8.0
        poller.start(["7"], 7.9)
        assert poller.in_flight == 0
    finally:
        poller.close()


def test_resend_after_fixes_when_a_poll_is_overtaken_or_says_never() -> None:
    held = HeldPolls()
    never = StatusPoller(held, LaunchOptions(resend_after=0.0), wake=lambda: None)
    fixed = StatusPoller(held, LaunchOptions(resend_after=2.0), wake=lambda: None)
    try:
        never.start(["1"], 0.0)
        assert never.due_at() == math.inf  # only an answer lets the next poll start
        never.start(["1"], 1e6)
        assert never.in_flight == 1
        fixed.start(["1"], 0.0)
        assert fixed.due_at() == 2.0  # whatever the latencies seen
        fixed.start(["1"], 1.9)
        assert fixed.in_flight == 1
        fixed.start(["1"], 2.0)
        assert fixed.in_flight == 2
    finally:
        held.release.set()
        never.close()
        fixed.close()
