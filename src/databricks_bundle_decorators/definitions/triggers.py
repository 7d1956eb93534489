"""Data triggers of a job: ``TableUpdate`` and ``FileArrival`` (values, validated here).

``@job(trigger=TableUpdate(sources=[ORDERS], max_keys=7))`` generates the documented
``trigger.table_update`` block and makes a triggered run process the keys the commits
changed (see the guide "Triggered and self-healing jobs"). Rules checked at definition,
each from the Jobs API reference (``jobs.TableUpdateTriggerConfiguration`` and
``jobs.FileArrivalTriggerConfiguration`` in databricks-sdk-py; the bundle schema's
``jobs.TriggerSettings``):

- ``table_names`` in the form ``catalog_name.schema_name.table_name``;
- ``condition`` ``ANY_UPDATED`` or ``ALL_UPDATED``;
- ``min_time_between_triggers_seconds`` and ``wait_after_last_change_seconds``: "The
  minimum allowed value is 60 seconds."
- ``file_arrival.url``: "The path must point to the root or a subpath of the external
  location" (a cloud URL or a ``/Volumes/`` path,
  https://docs.databricks.com/aws/en/jobs/file-arrival-triggers).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from ..backfill.base import BackfillDef
from ..backfill.time_backfill import TimeBackfill
from ..backfill.wire.trigger import trigger_parameters
from ..errors import DefinitionError
from .sources import Source

Condition = Literal["ANY_UPDATED", "ALL_UPDATED"]
MIN_TRIGGER_SECONDS = 60
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}(\.[A-Za-z_][A-Za-z0-9_]{0,254}){2}")
_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://[^\s]+|/Volumes/[^\s]+)")


def _seconds(value: int | timedelta | None, what: str) -> int | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise DefinitionError(f"{what} must be seconds (an int) or a timedelta, got {value!r}")
    if seconds != int(seconds) or seconds < MIN_TRIGGER_SECONDS:
        raise DefinitionError(
            f"{what}={value!r}: Databricks allows whole seconds, at least {MIN_TRIGGER_SECONDS}"
        )
    return int(seconds)


def _max_keys(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"max_keys={value!r} must be a positive int (or None: no cap)")
    return value


@dataclass(frozen=True, slots=True)
class TableUpdate:
    """Run the job when its source tables commit; the run processes the changed keys.

    Args:
        sources: The :func:`source` tables to watch; each needs an ``event_time`` column
            (it maps changed rows to keys).
        condition: ``"ANY_UPDATED"`` (Databricks' behaviour when left out) or
            ``"ALL_UPDATED"``.
        max_keys: At most this many keys per run, oldest first; the rest stay pending
            for the next run (``dbxdec status`` shows them). ``None``: no cap.
        min_time_between_triggers: Seconds (or a timedelta, at least 60) between runs.
        wait_after_last_change: Seconds (at least 60) without commits before a run
            starts: commits within the window become one run over their union.
        state_table: The Delta table (``catalog.schema.table``) holding each run's keys
            and the processed-version watermarks; default ``dbxdec_trigger_state`` in
            the schema of the first source.

    Raises:
        DefinitionError: a bad value (one line naming it).
    """

    sources: tuple[Source, ...]
    condition: Condition = "ANY_UPDATED"
    max_keys: int | None = None
    min_time_between_triggers: int | None = None
    wait_after_last_change: int | None = None
    state_table: str = field(default="")

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        condition: Condition = "ANY_UPDATED",
        max_keys: int | None = None,
        min_time_between_triggers: int | timedelta | None = None,
        wait_after_last_change: int | timedelta | None = None,
        state_table: str | None = None,
    ) -> None:
        items = list(sources) if isinstance(sources, list | tuple) else None
        if not items or not all(isinstance(s, Source) for s in items):
            raise DefinitionError(
                "TableUpdate(sources=...) must be a non-empty list of source(...) declarations"
            )
        for item in items:
            if item.event_time is None:
                raise DefinitionError(
                    f"TableUpdate: source {item.name} has no event_time; declare "
                    "source(..., event_time='<column>') so changed rows map to keys"
                )
        if condition not in ("ANY_UPDATED", "ALL_UPDATED"):
            raise DefinitionError(
                f"TableUpdate: condition={condition!r} must be 'ANY_UPDATED' or 'ALL_UPDATED'"
            )
        first = items[0].name.rsplit(".", 1)[0]
        table = state_table or f"{first}.dbxdec_trigger_state"
        set_ = object.__setattr__
        set_(self, "sources", tuple(items))
        set_(self, "condition", condition)
        set_(self, "max_keys", _max_keys(max_keys))
        set_(
            self,
            "min_time_between_triggers",
            _seconds(min_time_between_triggers, "min_time_between_triggers"),
        )
        set_(
            self,
            "wait_after_last_change",
            _seconds(wait_after_last_change, "wait_after_last_change"),
        )
        if not isinstance(table, str) or _TABLE.fullmatch(table) is None:
            raise DefinitionError(
                f"TableUpdate: state_table={table!r} must be catalog.schema.table"
            )
        set_(self, "state_table", table)

    @property
    def table_names(self) -> tuple[str, ...]:
        """The watched tables, ``catalog.schema.table``."""
        return tuple(s.name for s in self.sources)

    def parameters(self) -> dict[str, str]:
        """The job parameters a triggered job declares (see :mod:`..backfill.wire.trigger`)."""
        return trigger_parameters(self.table_names)


@dataclass(frozen=True, slots=True)
class FileArrival:
    """Run the job when files arrive under ``url`` (a cloud URL or ``/Volumes/...``).

    Args:
        url: The monitored location.
        min_time_between_triggers: Seconds (at least 60) between runs.
        wait_after_last_change: Seconds (at least 60) without new files before a run.

    Raises:
        DefinitionError: a bad value (one line naming it).
    """

    url: str
    min_time_between_triggers: int | None = None
    wait_after_last_change: int | None = None

    def __init__(
        self,
        url: str,
        *,
        min_time_between_triggers: int | timedelta | None = None,
        wait_after_last_change: int | timedelta | None = None,
    ) -> None:
        if not isinstance(url, str) or _URL.fullmatch(url) is None:
            raise DefinitionError(
                f"FileArrival: url={url!r} must be a cloud URL (s3://..., abfss://..., "
                "gs://...) or a /Volumes/... path"
            )
        object.__setattr__(self, "url", url)
        object.__setattr__(
            self,
            "min_time_between_triggers",
            _seconds(min_time_between_triggers, "min_time_between_triggers"),
        )
        object.__setattr__(
            self,
            "wait_after_last_change",
            _seconds(wait_after_last_change, "wait_after_last_change"),
        )


Trigger = TableUpdate | FileArrival


def trigger_of(
    settings: dict[str, Any], backfill: BackfillDef | None, job: str, where: str
) -> Trigger | None:
    """Take ``trigger`` out of ``settings`` when it is a :class:`TableUpdate` or
    :class:`FileArrival`; a raw dict stays in ``settings`` (passed through as before),
    with a warning naming the typed values.

    Raises:
        DefinitionError: a ``TableUpdate`` on a job without a time-based backfill, or a
            trigger that is neither a value nor a dict.
    """
    value = settings.get("trigger")
    if value is None:
        return None
    if isinstance(value, dict):
        warnings.warn(
            f"job {job!r}: trigger={{...}} is passed to Databricks as is and runs resolve the "
            "key of now; use trigger=TableUpdate(...) (or FileArrival(...)) so a triggered "
            "run processes the keys that changed",
            UserWarning,
            stacklevel=4,
        )
        return None
    if not isinstance(value, TableUpdate | FileArrival):
        raise DefinitionError(
            f"trigger must be TableUpdate(...), FileArrival(...) or a dict, got "
            f"{type(value).__name__}",
            job=job,
            location=where,
        )
    if isinstance(value, TableUpdate) and not isinstance(backfill, TimeBackfill):
        raise DefinitionError(
            "trigger=TableUpdate(...) needs a time-based backfill (DailyBackfill, ...): "
            "changed rows map to its keys",
            job=job,
            location=where,
        )
    del settings["trigger"]
    return value
