"""SQL predicates over partition keys and time windows, built from quoted literals only:
every value goes through :func:`quote_literal` or :func:`quote_identifier`, even values
validated upstream.

Example:
    >>> keys_predicate("event_date", ["2024-01-01", "2024-01-02"])
    "`event_date` IN ('2024-01-01', '2024-01-02')"
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

from ...backfill import TimeWindow

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
COLUMN_RULE = "a letter or _ then up to 127 of A-Z a-z 0-9 _"


def check_column(name: object, *, what: str = "column") -> str:
    """``name`` if it is a plain column name, else ``ValueError``."""
    if not isinstance(name, str) or _COLUMN.fullmatch(name) is None:
        raise ValueError(f"{what} {name!r} is not a valid column name: expected {COLUMN_RULE}")
    return name


def quote_identifier(name: str) -> str:
    """A backtick-quoted column name (a backtick inside is doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_literal(value: str) -> str:
    """A Spark SQL string literal whose value is exactly ``value``.

    Backslashes and single quotes are escaped with a backslash; control characters
    are written as escapes so the predicate stays on one line.

    Example:
        >>> quote_literal("it's")
        "'it\\\\'s'"
    """
    if not isinstance(value, str):
        raise TypeError(f"predicate values are strings, got {type(value).__name__}")
    escaped = (
        value.replace("\\", "\\\\")
        .replace("'", "\\'")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("\x00", "\\0")
    )
    return f"'{escaped}'"


def timestamp_literal(at: datetime) -> str:
    """A Spark SQL ``TIMESTAMP`` literal of an aware datetime, in UTC.

    Example:
        >>> from datetime import datetime, timezone
        >>> timestamp_literal(datetime(2024, 1, 1, tzinfo=timezone.utc))
        "TIMESTAMP '2024-01-01 00:00:00Z'"
    """
    if at.tzinfo is None:
        raise ValueError("timestamp literals need a timezone-aware datetime")
    utc = at.astimezone(timezone.utc)
    text = utc.strftime("%Y-%m-%d %H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return f"TIMESTAMP '{text}Z'"


def keys_predicate(column: str, keys: Sequence[str]) -> str:
    """``column`` equal to one of ``keys`` (``FALSE`` for no keys)."""
    check_column(column)
    if not keys:
        return "FALSE"
    quoted = ", ".join(quote_literal(key) for key in keys)
    return f"{quote_identifier(column)} IN ({quoted})"


def windows_predicate(column: str, spans: Sequence[TimeWindow]) -> str:
    """``column`` inside one of the half-open ``spans`` (``FALSE`` for none)."""
    check_column(column)
    if not spans:
        return "FALSE"
    col = quote_identifier(column)
    parts = [
        f"({col} >= {timestamp_literal(span.start_utc())} AND "
        f"{col} < {timestamp_literal(span.end_utc())})"
        for span in spans
    ]
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def conjunction(*predicates: str | None) -> str | None:
    """The ``AND`` of the given predicates, ``None`` when there are none."""
    return _combine("AND", predicates)


def disjunction(*predicates: str | None) -> str | None:
    """The ``OR`` of the given predicates, ``None`` when there are none."""
    return _combine("OR", predicates)


def _combine(operator: str, predicates: Sequence[str | None]) -> str | None:
    present = [p for p in predicates if p]
    if not present:
        return None
    return present[0] if len(present) == 1 else f" {operator} ".join(f"({p})" for p in present)


def equals_predicate(column: str, value: str) -> str:
    """``column`` equal to the quoted literal ``value``."""
    check_column(column)
    return f"{quote_identifier(column)} = {quote_literal(value)}"
