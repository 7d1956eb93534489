"""Backfills over a fixed list of keys (regions, tenants, sources...)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from datetime import datetime

from .base import BackfillDef

# Static keys end up in SQL literals (``region = 'eu'``) and in path segments, so only a
# conservative character set is accepted: no quotes, separators, whitespace or '..'.
_STATIC_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
STATIC_KEY_RULE = "1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or digit"


def check_static_key(key: object) -> str:
    """Return ``key`` if it is a safe static key, else raise ``ValueError``."""
    if not isinstance(key, str):
        raise ValueError(f"static backfill key {key!r} must be a string")
    if _STATIC_KEY.fullmatch(key) is None:
        raise ValueError(f"static backfill key {key!r} is not allowed: expected {STATIC_KEY_RULE}")
    return key


class StaticBackfill(BackfillDef):
    """A fixed, ordered set of backfill keys.

    The list is copied, so later changes to the caller's list do not leak in. Ranges
    (``keys(start, end)``) use positions in the declared order.

    Example:
        >>> regions = StaticBackfill(keys=["us", "eu", "jp"])
        >>> regions.keys(start="eu")
        ['eu', 'jp']
    """

    __slots__ = ("_keys", "_positions")
    _keys: tuple[str, ...]
    _positions: dict[str, int]

    def __init__(self, keys: Iterable[str]) -> None:
        if isinstance(keys, str):
            raise ValueError("StaticBackfill(keys=...) takes a list of keys, not one string")
        copied = tuple(keys)
        if not copied:
            raise ValueError("StaticBackfill(keys=...) needs at least one key")
        positions: dict[str, int] = {}
        for position, key in enumerate(copied):
            check_static_key(key)
            if key in positions:
                raise ValueError(f"StaticBackfill key {key!r} is declared twice")
            positions[key] = position
        object.__setattr__(self, "_keys", copied)
        object.__setattr__(self, "_positions", positions)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("StaticBackfill is immutable")

    def __repr__(self) -> str:
        return f"StaticBackfill(keys={list(self._keys)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StaticBackfill) and other._keys == self._keys

    def __hash__(self) -> int:
        return hash(self._keys)

    @property
    def kind(self) -> str:
        return "static"

    @property
    def key_format(self) -> str:
        return "one of the declared keys"

    @property
    def declared_keys(self) -> tuple[str, ...]:
        """The declared keys, in order."""
        return self._keys

    def keys(
        self, start: str | None = None, end: str | None = None, *, now: datetime | None = None
    ) -> list[str]:
        """The declared keys from ``start`` to ``end`` (inclusive); ``now`` is ignored."""
        lo = 0 if start is None else self._position(start, "start")
        hi = len(self._keys) - 1 if end is None else self._position(end, "end")
        if lo > hi:
            raise ValueError(f"start {start!r} comes after end {end!r} in the declared key order")
        return list(self._keys[lo : hi + 1])

    def validate_key(self, key: str, *, what: str = "backfill_key") -> None:
        self._position(key, what)

    def sort_keys(self, keys: list[str]) -> list[str]:
        return sorted(set(keys), key=lambda k: self._positions.get(k, len(self._positions)))

    def _position(self, key: str, what: str) -> int:
        position = self._positions.get(key) if isinstance(key, str) else None
        if position is None:
            shown = ", ".join(self._keys[:10]) + (", ..." if len(self._keys) > 10 else "")
            close = difflib.get_close_matches(str(key), self._keys, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{what} {key!r} is not a declared static key ({shown}).{hint}")
        return position
