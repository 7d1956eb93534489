"""What a triggered job still owes after keyed runs covered some keys
(``backfill/changed_keys.py``), checked against a brute-force reading of the rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.backfill.changed_keys import Change, Coverage, uncovered_keys

DAILY = DailyBackfill("2024-01-01", lookback=2)
CURRENT = "2024-01-20"
DAYS = [f"2024-01-{d:02d}" for d in range(1, 21)]

day = st.sampled_from(DAYS)
changes = st.lists(
    st.builds(Change, st.sampled_from(["a", "b"]), st.integers(1, 6), day), max_size=8
)
coverages = st.lists(
    st.builds(
        Coverage,
        st.frozensets(day, max_size=6),
        st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 6)),
    ),
    max_size=4,
)


def test_a_run_covers_the_changes_it_read_and_not_the_later_ones() -> None:
    ran = Coverage(frozenset({"2024-01-05", "2024-01-06", "2024-01-07"}), {"a": 3})
    read = [Change("a", 3, "2024-01-05")]  # affects 05..07: all read at version 3
    later = [Change("a", 4, "2024-01-05")]  # the same key, after the run read

    assert uncovered_keys(DAILY, read, [ran], current=CURRENT) == []
    assert uncovered_keys(DAILY, later, [ran], current=CURRENT) == [
        "2024-01-05",
        "2024-01-06",
        "2024-01-07",
    ]
    # A pending key is covered by a run that read at or after the watermark.
    assert uncovered_keys(DAILY, [], [ran], pending=["2024-01-06"], watermark={"a": 3},
                          current=CURRENT) == []  # fmt: skip
    assert uncovered_keys(DAILY, [], [ran], pending=["2024-01-06"], watermark={"a": 4},
                          current=CURRENT) == ["2024-01-06"]  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(changes, coverages)
def test_exactly_the_keys_some_change_needs_and_no_run_read(
    found: list[Change], covered: list[Coverage]
) -> None:
    owed = uncovered_keys(DAILY, found, covered, current=CURRENT)

    expected = set()
    for change in found:
        index = DAYS.index(change.key)
        for key in DAYS[index : index + DAILY.lookback + 1]:  # S..S+N, up to the current key
            read = any(key in c.keys and c.versions.get(change.source, -1) >= change.version
                       for c in covered)  # fmt: skip
            if not read:
                expected.add(key)
    assert owed == sorted(expected)
    if not covered:  # nothing covered: exactly what a triggered run would process
        assert set(owed) == {k for c in found for k in DAYS[DAYS.index(c.key) :][:3]}
