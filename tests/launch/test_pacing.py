"""Retry backoff and poll pacing."""

from __future__ import annotations

from databricks_bundle_decorators.launch.pacing import PollPacer, SchedulerOptions, backoff


def test_backoff_doubles_and_is_capped() -> None:
    options = SchedulerOptions(retry_delay=2.0, max_retry_delay=10.0)
    assert [backoff(options, n) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 10.0]


def test_polls_grow_apart_until_a_run_has_ended() -> None:
    pacer = PollPacer(SchedulerOptions(poll_interval=1.0, max_poll_interval=3.0))
    dues = [pacer.next_poll(100.0, ended=False, starts=[]) for _ in range(4)]
    assert dues == [101.5, 102.25, 103.0, 103.0]


def test_no_poll_before_a_run_can_have_ended_then_gentle_when_overdue() -> None:
    pacer = PollPacer(SchedulerOptions(poll_interval=0.5, max_poll_interval=100.0))
    for _ in range(20):
        pacer.record(100.0)  # runs take about 100 s
    assert pacer.next_poll(10.0, ended=True, starts=[0.0, 5.0]) == 80.0  # 0 + 0.8 * 100
    assert pacer.next_poll(80.0, ended=False, starts=[0.0]) == 80.5
    assert pacer.next_poll(280.0, ended=False, starts=[0.0]) == 280.0 + 0.5 + 20.0
