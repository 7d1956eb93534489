"""StaticBackfill: declared keys, positions and safety of key characters."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.backfill import StaticBackfill


def test_keys_in_declared_order_and_ranges_by_position() -> None:
    regions = StaticBackfill(keys=["us", "eu", "jp", "br"])
    assert regions.keys() == ["us", "eu", "jp", "br"]
    assert regions.keys(start="eu", end="jp") == ["eu", "jp"]
    assert regions.current_key() is None
    assert regions.window("us") is None


def test_list_is_copied_defensively() -> None:
    declared = ["us", "eu"]
    regions = StaticBackfill(keys=declared)
    declared.append("jp")
    assert regions.keys() == ["us", "eu"]
    with pytest.raises(AttributeError):
        regions._keys = ("x",)  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    ["", "eu'; DROP TABLE x; --", "a b", "../etc", "x/y", "é", "a" * 129, "-lead"],
    ids=[
        "empty",
        "sql-injection",
        "space",
        "dotdot",
        "slash",
        "non-ascii",
        "too-long",
        "leading-dash",
    ],
)
def test_unsafe_keys_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        StaticBackfill(keys=["ok", bad])


def test_duplicates_and_empty_rejected() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        StaticBackfill(keys=["us", "us"])
    with pytest.raises(ValueError, match="at least one"):
        StaticBackfill(keys=[])
    with pytest.raises(ValueError, match="not one string"):
        StaticBackfill(keys="us")


def test_unknown_key_suggests() -> None:
    with pytest.raises(
        ValueError, match=r"'eur' is not a declared static key \(us, eu\)\. Did you mean 'eu'\?"
    ):
        StaticBackfill(keys=["us", "eu"]).validate_key("eur")


def test_reversed_range_rejected() -> None:
    with pytest.raises(ValueError, match="comes after"):
        StaticBackfill(keys=["us", "eu", "jp"]).keys(start="jp", end="us")
