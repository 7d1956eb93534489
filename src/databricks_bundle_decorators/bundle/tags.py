"""Job tags: the backfill definition written into tags and read back from them. Tags reach
job clusters, so they obey cluster tag rules: keys of 1-127 and values of up to 255
characters from letters, digits, spaces and ``_ . : / = + - @``; at most 25 per job."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from ..backfill import (
    BackfillDef,
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    MultiBackfill,
    StaticBackfill,
    TimeBackfill,
    WeeklyBackfill,
)
from ..backfill.multi import KIND_PREFIX as MULTI_KIND_PREFIX

TAG_PREFIX = "dbxdec_"
BACKFILL_TAG = "dbxdec_backfill"
MAX_TAGS = 25
MAX_TAG_KEY_LENGTH = 127
MAX_TAG_VALUE_LENGTH = 255
_TAG_TEXT = re.compile(r"[\w .:/=+\-@]*")
_STATIC_SEPARATOR = ":"
_MAX_KEY_CHUNKS = 4
_TIME_CLASSES: dict[str, type[TimeBackfill]] = {
    "daily": DailyBackfill,
    "weekly": WeeklyBackfill,
    "monthly": MonthlyBackfill,
    "hourly": HourlyBackfill,
}


@lru_cache(maxsize=4096)  # the jobs of a project mostly share their tags
def tag_problem(key: str, value: str) -> str | None:
    """Why ``key: value`` breaks Databricks' tag rules, or ``None`` when it is fine."""
    if not 1 <= len(key) <= MAX_TAG_KEY_LENGTH:
        return f"tag key {key!r} must be 1-{MAX_TAG_KEY_LENGTH} characters"
    if len(value) > MAX_TAG_VALUE_LENGTH:
        return f"tag {key!r} has a value longer than {MAX_TAG_VALUE_LENGTH} characters"
    for what, text in (("key", key), ("value", value)):
        if _TAG_TEXT.fullmatch(text) is None:
            return f"tag {what} {text!r} may only hold letters, digits, spaces and _ . : / = + - @"
    return None


def backfill_tags(backfill: BackfillDef) -> dict[str, str]:
    """The tags that describe ``backfill``.

    Example:
        >>> backfill_tags(DailyBackfill("2024-01-01", tz="Europe/Berlin", lookback=2))
        ... # doctest: +NORMALIZE_WHITESPACE
        {'dbxdec_backfill': 'daily', 'dbxdec_backfill_start': '2024-01-01',
         'dbxdec_backfill_tz': 'Europe/Berlin', 'dbxdec_backfill_lookback': '2',
         'dbxdec_backfill_data_lag': '0', 'dbxdec_backfill_gaps': 'false'}
    """
    tags = {BACKFILL_TAG: backfill.kind}
    if isinstance(backfill, MultiBackfill):
        tags.update(_time_tags(backfill.time))
        tags.update(_static_tags(backfill.static))
    elif isinstance(backfill, TimeBackfill):
        tags.update(_time_tags(backfill))
    elif isinstance(backfill, StaticBackfill):
        tags.update(_static_tags(backfill))
    return tags


def _time_tags(backfill: TimeBackfill) -> dict[str, str]:
    tags = {
        "start": backfill.start_date,
        "end": backfill.end_date,
        "tz": backfill.tz,
        "lookback": str(backfill.lookback),
        "data_lag": str(backfill.data_lag),
        "gaps": "true" if backfill.collect_schedule_gaps else "false",
    }
    return {f"{BACKFILL_TAG}_{k}": v for k, v in tags.items() if v is not None}


def _static_tags(backfill: StaticBackfill) -> dict[str, str]:
    chunks = _chunks(backfill.declared_keys)
    tags = {f"{BACKFILL_TAG}_count": str(len(backfill.declared_keys))}
    if len(chunks) <= _MAX_KEY_CHUNKS:
        for index, chunk in enumerate(chunks):
            tags[f"{BACKFILL_TAG}_keys" + (f"_{index + 1}" if index else "")] = chunk
    return tags


def backfill_from_tags(tags: Mapping[str, str]) -> BackfillDef | None:
    """The backfill definition written by :func:`backfill_tags`; ``None`` without one.

    Raises:
        ValueError: the tags are malformed, or held too many static keys to store.
    """
    kind = tags.get(BACKFILL_TAG)
    if kind is None:
        return None
    if kind in _TIME_CLASSES:
        return _time_from_tags(kind, tags)
    if kind == "static":
        return _static_from_tags(tags)
    multi = kind.removeprefix(MULTI_KIND_PREFIX)
    if multi != kind and multi in _TIME_CLASSES:
        return MultiBackfill(_static_from_tags(tags), _time_from_tags(multi, tags))
    raise ValueError(f"unknown backfill kind {kind!r} in tag {BACKFILL_TAG!r}")


def _time_from_tags(kind: str, tags: Mapping[str, str]) -> TimeBackfill:
    try:
        return _TIME_CLASSES[kind](
            start_date=tags[f"{BACKFILL_TAG}_start"],
            end_date=tags.get(f"{BACKFILL_TAG}_end"),
            tz=tags.get(f"{BACKFILL_TAG}_tz", "UTC"),
            lookback=int(tags.get(f"{BACKFILL_TAG}_lookback", "0")),
            data_lag=int(tags.get(f"{BACKFILL_TAG}_data_lag", "0")),
            collect_schedule_gaps=tags.get(f"{BACKFILL_TAG}_gaps", "false") == "true",
        )
    except KeyError as exc:
        raise ValueError(f"backfill tags lack {exc.args[0]!r}") from None


def _static_from_tags(tags: Mapping[str, str]) -> StaticBackfill:
    parts = [tags.get(f"{BACKFILL_TAG}_keys", "")]
    index = 2
    while f"{BACKFILL_TAG}_keys_{index}" in tags:
        parts.append(tags[f"{BACKFILL_TAG}_keys_{index}"])
        index += 1
    keys = [key for part in parts for key in part.split(_STATIC_SEPARATOR) if key]
    expected = int(tags.get(f"{BACKFILL_TAG}_count", str(len(keys))))
    if len(keys) != expected:
        raise ValueError(
            f"the job's {expected} static backfill keys are too many to be stored in tags"
        )
    return StaticBackfill(keys)


def _chunks(keys: tuple[str, ...]) -> list[str]:
    chunks: list[str] = []
    current = ""
    for key in keys:
        candidate = f"{current}{_STATIC_SEPARATOR}{key}" if current else key
        if len(candidate) > MAX_TAG_VALUE_LENGTH:
            chunks.append(current)
            candidate = key
        current = candidate
    chunks.append(current)
    return chunks
