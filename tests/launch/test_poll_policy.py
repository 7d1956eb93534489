"""The adaptive polling policy, as pure functions: when the next status poll is due."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.policy.poll_policy import (
    MIN_POLL_GAP,
    PollBounds,
    PollPacer,
    learnt_run_length,
    next_poll_time,
)

BOUNDS = PollBounds(min_gap=0.05, max_gap=15.0, due_gap=1.0, fraction=0.05, first_fraction=0.05)

seconds = st.floats(min_value=0.0, max_value=10_000.0, allow_nan=False)
lengths = st.none() | st.floats(min_value=0.001, max_value=5_000.0, allow_nan=False)
bounds = st.builds(
    PollBounds,
    min_gap=st.floats(min_value=0.001, max_value=2.0),
    max_gap=st.floats(min_value=0.001, max_value=60.0),
    due_gap=st.floats(min_value=0.001, max_value=30.0),
    fraction=st.floats(min_value=0.001, max_value=1.0),
    first_fraction=st.floats(min_value=0.001, max_value=1.0),
)


@st.composite
def moments(draw: st.DrawFn) -> tuple[float, list[float]]:
    """A time and the submission times (no later than it) of the runs in flight."""
    now = draw(seconds)
    ages = draw(st.lists(st.floats(min_value=0.0, max_value=5_000.0), max_size=60))
    return now, [now - age for age in ages]


@given(moments(), lengths, bounds)
def test_never_later_than_the_earliest_expected_end_plus_the_bound(
    moment: tuple[float, list[float]], run_length: float | None, limits: PollBounds
) -> None:
    now, starts = moment
    due = next_poll_time(now, starts, run_length, limits)
    assert due <= now + max(limits.min_gap, limits.max_gap) + 1e-9
    if run_length is not None:
        coming = [s + run_length for s in starts if s + run_length > now]
        if coming:
            assert due <= min(coming) + limits.min_gap + 1e-9


@given(moments(), lengths, bounds)
def test_a_due_run_is_seen_within_a_fraction_of_its_age(
    moment: tuple[float, list[float]], run_length: float | None, limits: PollBounds
) -> None:
    now, starts = moment
    due = next_poll_time(now, starts, run_length, limits)
    threshold = 0.0 if run_length is None else run_length
    ages = [now - s for s in starts if now - s >= threshold]
    if ages and run_length is None:  # before anything is learnt: the oldest's age
        assert due <= now + max(limits.min_gap, limits.first_fraction * max(ages)) + 1e-9
    elif ages:
        assert due <= now + max(limits.min_gap, limits.fraction * min(ages)) + 1e-9


@given(
    st.lists(st.floats(min_value=0.0, max_value=3.0), min_size=1, max_size=200),
    st.lists(st.floats(min_value=0.0, max_value=100.0), max_size=40),
    lengths,
    bounds,
)
def test_the_request_rate_never_exceeds_the_bound(
    latencies: list[float], ages: list[float], run_length: float | None, limits: PollBounds
) -> None:
    """Polls started one after another as the policy says (each answered after some
    latency, the next planned when it answers) are never closer than ``min_gap``, so
    any window of T seconds holds at most T / min_gap + 1 poll starts."""
    starts_of_polls = [0.0]
    for latency in latencies:
        answered = starts_of_polls[-1] + latency
        runs = [answered - age for age in ages]
        starts_of_polls.append(max(answered, next_poll_time(answered, runs, run_length, limits)))
    gaps = [b - a for a, b in pairwise(starts_of_polls)]
    assert min(gaps) >= limits.min_gap - 1e-9
    window = 1.0
    for i, first in enumerate(starts_of_polls):
        inside = [t for t in starts_of_polls[i:] if t < first + window]
        assert len(inside) <= window / limits.min_gap + 1


def test_polls_at_the_expected_end_then_within_a_fraction_of_a_due_runs_age() -> None:
    # runs of about 10 s, submitted at 0 and 4
    assert next_poll_time(9.0, [0.0, 4.0], 10.0, BOUNDS) == 10.0
    assert next_poll_time(11.0, [0.0, 4.0], 10.0, BOUNDS) == pytest.approx(11.0 + 0.05 * 11.0)


def test_long_runs_are_polled_no_further_apart_than_the_poll_interval_when_due() -> None:
    # a 1-hour run just due: a twentieth of its age would be 3 minutes
    assert next_poll_time(3600.0, [0.0], 3600.0, BOUNDS) == 3601.0
    # an hour overdue: a tenth of the overdue time is added, up to the ceiling
    assert next_poll_time(7200.0, [0.0], 3600.0, BOUNDS) == 7215.0


def test_before_any_run_has_ended_the_gap_grows_with_the_oldest_runs_age() -> None:
    assert next_poll_time(100.0, [99.9], None, BOUNDS) == pytest.approx(100.05)  # the floor
    assert next_poll_time(100.0, [80.0, 90.0], None, BOUNDS) == pytest.approx(101.0)
    assert next_poll_time(1000.0, [0.0], None, BOUNDS) == 1015.0  # the ceiling


def test_with_nothing_in_flight_the_next_run_is_polled_soon() -> None:
    assert next_poll_time(5.0, [], 600.0, BOUNDS) == pytest.approx(5.05)


def test_the_learnt_length_is_a_margin_under_a_low_quantile() -> None:
    assert learnt_run_length([]) is None
    assert learnt_run_length([10.0] * 9 + [1.0]) == pytest.approx(8.0)
    assert learnt_run_length([float(n) for n in range(1, 101)]) == pytest.approx(0.8 * 11)


def test_the_pacer_learns_from_ended_runs() -> None:
    pacer = PollPacer(LaunchOptions(poll_interval=1.0, max_poll_interval=15.0))
    assert pacer.bounds == PollBounds(MIN_POLL_GAP, 15.0, 1.0)
    assert (pacer.bounds.fraction, pacer.bounds.first_fraction) == (0.01, 0.03)
    assert pacer.next_poll(10.0, starts=[0.0]) == pytest.approx(10.3)  # nothing learnt
    for _ in range(10):
        pacer.record(100.0)
    assert pacer.run_length == pytest.approx(80.0)
    assert pacer.next_poll(70.0, starts=[0.0, 5.0]) == 80.0
    assert pacer.next_poll(90.0, starts=[0.0, 5.0]) == pytest.approx(90.0 + 0.01 * 85.0)
    assert pacer.next_poll(10.0, starts=[0.0, 5.0]) == 25.0  # no further apart than the ceiling


def test_a_smaller_poll_interval_lowers_the_rate_floor() -> None:
    bounds = PollBounds.of(LaunchOptions(poll_interval=0.01, max_poll_interval=15.0))
    assert (bounds.min_gap, bounds.due_gap) == (0.01, 0.01)
