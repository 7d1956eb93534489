"""The key model of data-driven runs: changed keys x lookback x cap, and catch-up gaps,
against a plain date-arithmetic model (hypothesis)."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.backfill.changed_keys import (
    affected_keys,
    missing_since,
    plan_keys,
)

START = date(2024, 1, 1)
offsets = st.integers(min_value=-5, max_value=60)  # days after START (negative: before it)


def _key(offset: int) -> str:
    return (START + timedelta(days=offset)).isoformat()


def test_the_decided_example() -> None:
    daily = DailyBackfill("2024-01-01", lookback=2)
    d = 20
    changed = [_key(d - 5), _key(d - 1)]
    assert affected_keys(daily, changed, _key(d)) == [
        _key(d - 5), _key(d - 4), _key(d - 3), _key(d - 1), _key(d)
    ]  # fmt: skip


@given(
    changed=st.lists(offsets, max_size=8),
    lookback=st.integers(min_value=0, max_value=5),
    current=st.integers(min_value=0, max_value=60),
    cap=st.one_of(st.none(), st.integers(min_value=1, max_value=10)),
)
def test_affected_keys_match_the_model_and_the_cap_takes_the_oldest(
    changed: list[int], lookback: int, current: int, cap: int | None
) -> None:
    daily = DailyBackfill("2024-01-01", lookback=lookback)
    expected: set[int] = set()
    for s in changed:
        if s < 0:
            continue  # before start_date: no output key
        last = s + lookback if s + lookback <= current else max(s, current)
        expected.update(range(s, last + 1))
    got = affected_keys(daily, [_key(s) for s in changed], _key(current))
    assert got == [_key(k) for k in sorted(expected)]

    plan = plan_keys(daily, got, cap)
    assert sorted((*plan.run, *plan.pending)) == got
    assert len(plan.run) == (len(got) if cap is None else min(cap, len(got)))
    if plan.run and plan.pending:
        assert max(plan.run) < min(plan.pending)  # oldest first


@given(
    present=st.lists(st.integers(min_value=0, max_value=40), max_size=10),
    current=st.integers(min_value=0, max_value=40),
)
def test_missing_since_is_every_key_after_the_last_present_one(
    present: list[int], current: int
) -> None:
    daily = DailyBackfill("2024-01-01")
    done = [p for p in present if p <= current]
    if not done or max(done) >= current:
        expected = [current]
    else:
        expected = list(range(max(done) + 1, current + 1))
    assert missing_since(daily, [_key(p) for p in present], _key(current)) == [
        _key(k) for k in expected
    ]
