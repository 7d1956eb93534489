"""``--batch-size auto``: the run model fitted to past runs and the size chosen from it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.estimate.auto_batch import (
    STARTUP_SHARE,
    batch_size_for,
    choose_batch_size,
    fit_model,
    rechoose,
)
from databricks_bundle_decorators.launch.estimate.estimate import PastRun


def runs_of(*sized: tuple[int, float], state: str = "succeeded") -> list[PastRun]:
    """Past runs of (keys, seconds), the first one the newest."""
    return [
        PastRun(1000.0 - i, 1000.0 - i + seconds, keys, state)  # type: ignore[arg-type]
        for i, (keys, seconds) in enumerate(sized)
    ]


def test_runs_of_different_sizes_are_fitted_by_least_squares() -> None:
    model = fit_model(runs_of((1, 180.0), (3, 300.0), (5, 420.0), (2, 240.0)))
    assert model is not None and model.basis == "fit"
    assert (model.startup, model.per_key) == pytest.approx((120.0, 60.0))
    assert (model.runs, model.fewest_keys, model.most_keys) == (4, 1, 5)


def test_failed_runs_are_left_out_and_a_negative_start_up_is_refitted_through_zero() -> None:
    runs = runs_of((2, 100.0), (4, 300.0)) + runs_of((9, 5.0), state="failed")
    model = fit_model(runs)
    assert model is not None and model.runs == 2
    assert model.startup == 0.0
    assert model.per_key == pytest.approx((2 * 100 + 4 * 300) / (2 * 2 + 4 * 4))


def test_single_key_history_assumes_the_documented_start_up_share() -> None:
    model = fit_model(runs_of((1, 400.0), (1, 420.0), (1, 380.0)))
    assert model is not None and model.basis == "share"
    assert model.startup == pytest.approx(STARTUP_SHARE * 400.0)
    assert model.per_key == pytest.approx((1 - STARTUP_SHARE) * 400.0)

    choice = choose_batch_size(model, keys=365, max_concurrent=4, target_seconds=900.0)
    assert choice.size == 2  # floor((900 - 100) / 300)
    assert "start-up is assumed to be 25% of their median run" in choice.lines()[1]


def test_no_history_falls_back_to_one_key_with_a_reason() -> None:
    assert fit_model(runs_of((3, 60.0), state="failed")) is None
    choice = choose_batch_size(None, keys=100, max_concurrent=4, job="nightly")
    assert choice.size == 1
    assert choice.lines() == [
        "batch size auto: 1 key per run",
        "  no successful past runs of nightly to measure: 1 key per run until some end",
    ]


def test_the_size_is_capped_so_that_every_slot_stays_busy() -> None:
    model = fit_model(runs_of((1, 70.0), (10, 160.0)))  # 60 s start-up + 10 s a key
    assert model is not None
    uncapped = choose_batch_size(model, keys=1000, max_concurrent=4, target_seconds=900.0)
    assert uncapped.size == 84
    capped = choose_batch_size(model, keys=100, max_concurrent=4, target_seconds=900.0)
    assert capped.size == 25
    assert "  capped at 100 keys // 4 at once = 25, so every slot stays busy" in capped.lines()


def test_fast_runs_choose_larger_batches_than_slow_runs() -> None:
    fast = fit_model(runs_of((1, 50.0), (7, 110.0)))  # 40 s start-up + 10 s a key
    slow = fit_model(runs_of((1, 160.0), (7, 880.0)))  # 40 s start-up + 120 s a key
    sizes = [
        choose_batch_size(m, keys=365, max_concurrent=4, target_seconds=900.0).size
        for m in (fast, slow)
    ]
    assert sizes == [86, 7]


def test_start_up_longer_than_the_target_gives_one_key_and_says_so() -> None:
    model = fit_model(runs_of((1, 1000.0), (2, 1010.0)))
    choice = choose_batch_size(model, keys=50, max_concurrent=2, target_seconds=900.0)
    assert choice.size == 1
    assert "  start-up alone takes the target run length: 1 key per run" in choice.lines()


def test_rechoose_prefers_this_backfills_newest_runs() -> None:
    prior = runs_of((1, 100.0), (1, 100.0))  # old and slow
    measured = [PastRun(5000.0 + i, 5010.0 + i, 1, "succeeded") for i in range(30)]
    choice = rechoose(1000, measured, prior, max_concurrent=4, target_seconds=100.0)
    assert choice.model is not None and choice.model.runs == 25  # the latest 25: all measured
    assert choice.size == 13  # floor((100 - 2.5) / 7.5)


# -- properties --------------------------------------------------------------------------

seconds = st.floats(min_value=0.0, max_value=1e5, allow_nan=False)
per_keys = st.floats(min_value=1e-3, max_value=1e5, allow_nan=False)
targets = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
counts = st.integers(min_value=1, max_value=10_000)
slots = st.integers(min_value=1, max_value=1000)


@given(seconds, per_keys, per_keys, targets, counts, slots)
def test_faster_per_key_never_chooses_a_smaller_batch(
    startup: float, a: float, b: float, target: float, keys: int, concurrent: int
) -> None:
    faster, slower = sorted((a, b))
    fast = batch_size_for(
        startup, faster, keys=keys, max_concurrent=concurrent, target_seconds=target
    )
    slow = batch_size_for(
        startup, slower, keys=keys, max_concurrent=concurrent, target_seconds=target
    )
    assert fast >= slow


@given(seconds, st.floats(min_value=0.0, max_value=1e5, allow_nan=False), targets, counts, slots)
def test_a_batch_has_at_least_one_key_and_at_most_all_of_them(
    startup: float, per_key: float, target: float, keys: int, concurrent: int
) -> None:
    size = batch_size_for(
        startup, per_key, keys=keys, max_concurrent=concurrent, target_seconds=target
    )
    assert 1 <= size <= keys
    if keys >= concurrent:
        assert -(-keys // size) >= concurrent  # at least as many runs as slots


@given(st.lists(st.tuples(st.integers(1, 50), seconds), min_size=1, max_size=40), counts, slots)
def test_any_history_gives_a_size_within_bounds(
    sized: list[tuple[int, float]], keys: int, concurrent: int
) -> None:
    choice = choose_batch_size(
        fit_model(runs_of(*sized)), keys=keys, max_concurrent=concurrent, target_seconds=900.0
    )
    assert 1 <= choice.size <= keys
    assert choice.lines()[0].startswith(f"batch size auto: {choice.size} ")
