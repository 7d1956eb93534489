"""The keys a file-arrival run takes, without Spark: for any listings before and after
and either form of path pattern, the keys of the files new or changed, nothing else."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators import DailyBackfill, KeyFromPath
from databricks_bundle_decorators.runtime.core.errors import TaskRunError
from databricks_bundle_decorators.runtime.triggers.file_arrival import (
    changed_files,
    path_keys,
    relative_path,
)

DAILY = DailyBackfill("2024-01-01")
ROOT = "/Volumes/main/raw/landing"
PATTERNS = {
    "template": KeyFromPath("date={key}/"),
    "regex": KeyFromPath(r"date=(?P<key>\d{4}-\d{2}-\d{2})/"),
}

_days = st.integers(0, 60).map(lambda n: (date(2024, 1, 1) + timedelta(days=n)).isoformat())
# A file under a keyed folder, or one whose path names no key (a manifest, a log).
_paths = st.one_of(
    st.tuples(_days, st.sampled_from(["a.json", "part-1.parquet"])).map(
        lambda t: f"dbfs:{ROOT}/date={t[0]}/{t[1]}"
    ),
    st.sampled_from([f"dbfs:{ROOT}/manifest.txt", f"dbfs:{ROOT}/logs/run.log"]),
)
_stamps = st.tuples(st.integers(0, 3), st.integers(0, 3))  # few values: many equal stamps
_listings = st.dictionaries(_paths, _stamps, max_size=12)


def _oracle_keys(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> set[str]:
    """The keys of the (path, size, mtime) triples of ``after`` not in ``before``, read
    from the path by splitting (not by the pattern under test)."""
    new = set(after.items()) - set(before.items())
    return {p.split("date=")[1].split("/")[0] for p, _ in new if "date=" in p}


@settings(max_examples=300, deadline=None)
@given(before=_listings, after=_listings, form=st.sampled_from(sorted(PATTERNS)))
def test_keys_taken_are_the_keys_of_files_new_or_changed(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], form: str
) -> None:
    changed, gone = changed_files(before, after)
    keys, unmatched = path_keys(PATTERNS[form], changed, ROOT, DAILY)
    assert keys == _oracle_keys(before, after)
    assert set(gone) == set(before) - set(after)  # gone files name no key
    assert all("date=" not in p for p in unmatched)


@given(after=_listings)
def test_before_the_first_processed_run_every_file_is_new(
    after: dict[str, tuple[int, int]],
) -> None:
    changed, gone = changed_files(None, after)
    assert changed == after and gone == ()


def test_a_path_key_in_the_wrong_format_fails_in_one_line_naming_the_file() -> None:
    with pytest.raises(TaskRunError) as caught:
        path_keys(KeyFromPath("date={key}/"), [f"{ROOT}/date=2024-3-5/a.json"], ROOT, DAILY)
    message = str(caught.value)
    assert "\n" not in message
    assert "date=2024-3-5/a.json" in message and "YYYY-MM-DD" in message


@pytest.mark.parametrize(
    ("path", "root", "relative"),
    [
        ("file:/tmp/in/date=2024-01-02/a.json", "/tmp/in", "date=2024-01-02/a.json"),
        ("dbfs:/Volumes/c/s/v/x/a.csv", "/Volumes/c/s/v/", "x/a.csv"),
        ("s3://bucket/landing/a.csv", "s3://bucket/landing", "a.csv"),
        ("abfss://c@acct.dfs.core.windows.net/in/a", "abfss://c@acct.dfs.core.windows.net/in", "a"),
    ],
    ids=["local", "volume", "s3", "abfss"],
)
def test_patterns_match_the_path_below_the_location(path: str, root: str, relative: str) -> None:
    assert relative_path(path, root) == relative
