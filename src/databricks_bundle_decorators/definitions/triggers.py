"""Data triggers of a job: ``TableUpdate`` and ``FileArrival`` (with where a file-arrival run
takes its keys: ``KeyFromPath``, ``KeyFromColumn``), validated at definition.

Rules from the Jobs API reference (databricks-sdk-py ``jobs.TableUpdateTriggerConfiguration``,
``jobs.FileArrivalTriggerConfiguration``; the bundle schema's ``jobs.TriggerSettings``):
``table_names`` as ``catalog_name.schema_name.table_name``; ``condition`` ``ANY_UPDATED`` or
``ALL_UPDATED``; ``min_time_between_triggers_seconds`` and ``wait_after_last_change_seconds``:
"The minimum allowed value is 60 seconds."; ``file_arrival.url`` "must point to the root or
a subpath of the external location" (https://docs.databricks.com/aws/en/jobs/file-arrival-triggers).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..backfill.base import BackfillDef
from ..backfill.time_backfill import TimeBackfill
from ..backfill.wire.trigger import file_arrival_parameters, trigger_parameters
from ..errors import DefinitionError
from .sources import COLUMN_NAME, Source, caller_project_root

FileFormat = Literal["parquet", "json", "csv", "orc"]
FILE_FORMATS: tuple[FileFormat, ...] = ("parquet", "json", "csv", "orc")
KEY_PLACEHOLDER = "{key}"


@dataclass(frozen=True, slots=True)
class KeyFromPath:
    """The key of a file is a part of its path (relative to the monitored location).

    ``pattern``: a template with one ``{key}`` (``"date={key}/"`` finds ``2024-03-15`` in
    ``date=2024-03-15/part-0.json``) or a regular expression with a group ``(?P<key>...)``.
    The first match counts; a file that does not match is skipped and logged; a match that is
    no key of the job's backfill fails the run.

    Raises:
        DefinitionError: not exactly one ``{key}``, or a regular expression that does not
            compile or has no ``key`` group.
    """

    pattern: str
    regex: re.Pattern[str] = field(compare=False, repr=False)

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise DefinitionError(
                f"KeyFromPath({pattern!r}): give a template with {KEY_PLACEHOLDER} "
                "(e.g. 'date={key}/') or a regex with a (?P<key>...) group"
            )
        if "(?P<key>" in pattern:
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise DefinitionError(
                    f"KeyFromPath({pattern!r}) is not a regular expression ({exc}); fix it or "
                    f"use a template with {KEY_PLACEHOLDER}"
                ) from None
        elif pattern.count(KEY_PLACEHOLDER) != 1:
            raise DefinitionError(
                f"KeyFromPath({pattern!r}) needs exactly one {KEY_PLACEHOLDER} "
                "(e.g. 'date={key}/') or a regular expression with a (?P<key>...) group"
            )
        else:  # {key} stands for one path segment's text (no /)
            before, _, after = pattern.partition(KEY_PLACEHOLDER)
            regex = re.compile(re.escape(before) + "(?P<key>[^/]+)" + re.escape(after))
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "regex", regex)

    def key_text(self, relative_path: str) -> str | None:
        """The key text in ``relative_path``, or ``None`` when the pattern does not match.

        Example:
            >>> KeyFromPath("date={key}/").key_text("date=2024-03-15/part-0.json")
            '2024-03-15'
            >>> day = KeyFromPath(r"day_(?P<key>\\d{4}-\\d{2}-\\d{2})\\.csv")
            >>> day.key_text("x/day_2024-03-01.csv")
            '2024-03-01'
            >>> KeyFromPath("date={key}/").key_text("manifest.json") is None
            True
        """
        match = self.regex.search(relative_path)
        return match.group("key") if match is not None else None


@dataclass(frozen=True, slots=True)
class KeyFromColumn:
    """The keys of a new file are those of ``column``'s values; the run reads only the new or
    changed files (``file_format``, reader ``options``).

    The column is a ``TIMESTAMP`` (keyed in the definition's zone), a ``DATE``, or text
    cast to a timestamp (in the session time zone); null rows have no key.

    Raises:
        DefinitionError: a bad column name, format or options.
    """

    column: str
    file_format: FileFormat = "parquet"
    options: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        column: str,
        *,
        file_format: FileFormat = "parquet",
        options: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(column, str) or COLUMN_NAME.fullmatch(column) is None:
            raise DefinitionError(f"KeyFromColumn({column!r}): not a column name")
        if file_format not in FILE_FORMATS:
            raise DefinitionError(
                f"KeyFromColumn: file_format={file_format!r} must be one of "
                f"{', '.join(FILE_FORMATS)}"
            )
        items = dict(options or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
            raise DefinitionError("KeyFromColumn: options must map reader option names to strings")
        if file_format == "csv":
            items.setdefault("header", "true")  # a column is found by its name
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "file_format", file_format)
        object.__setattr__(self, "options", tuple(sorted(items.items())))


FileKeys = KeyFromPath | KeyFromColumn

Condition = Literal["ANY_UPDATED", "ALL_UPDATED"]
MIN_TRIGGER_SECONDS = 60
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}(\.[A-Za-z_][A-Za-z0-9_]{0,254}){2}")
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


def _set_common(
    trigger: object,
    what: str,
    max_keys: object,
    min_time_between_triggers: int | timedelta | None,
    wait_after_last_change: int | timedelta | None,
    table: str,
    given: object,
) -> None:
    """Check and set the fields both triggers have; ``given``: the state table as written."""
    if max_keys is not None and (
        isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1
    ):
        raise DefinitionError(f"max_keys={max_keys!r} must be a positive int (or None: no cap)")
    set_ = object.__setattr__
    set_(trigger, "max_keys", max_keys)
    for name, value in (
        ("min_time_between_triggers", min_time_between_triggers),
        ("wait_after_last_change", wait_after_last_change),
    ):
        set_(trigger, name, _seconds(value, name))
    if given is not None and (not isinstance(given, str) or TABLE_NAME.fullmatch(given) is None):
        raise DefinitionError(f"{what}: state_table={given!r} must be catalog.schema.table")
    set_(trigger, "state_table", table)


@dataclass(frozen=True, slots=True)
class TableUpdate:
    """Run the job when its source tables commit; the run processes the changed keys.

    Args:
        sources: The :func:`source` tables to watch, each with an ``event_time`` column.
        condition: ``"ANY_UPDATED"`` (Databricks' default) or ``"ALL_UPDATED"``.
        max_keys: At most this many keys per run, oldest first; the rest stay pending
            (``dbxdec status`` shows them). ``None``: no cap.
        min_time_between_triggers: Seconds (or a timedelta, at least 60) between runs.
        wait_after_last_change: Seconds (at least 60) without commits before a run starts.
        state_table: Delta table (``catalog.schema.table``) of each run's keys and the
            version watermarks; default ``dbxdec_trigger_state`` in the first source's schema.

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
        table = state_table or f"{items[0].name.rsplit('.', 1)[0]}.dbxdec_trigger_state"
        object.__setattr__(self, "sources", tuple(items))
        object.__setattr__(self, "condition", condition)
        _set_common(
            self,
            "TableUpdate",
            max_keys,
            min_time_between_triggers,
            wait_after_last_change,
            table,
            table,
        )

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

    With ``keys``, a triggered run processes the keys of the files new or changed since the
    last processed run; without, it resolves the key of its trigger time.

    Args:
        url: The monitored location.
        keys: :class:`KeyFromPath` or :class:`KeyFromColumn`.
        max_keys: At most this many keys per run, oldest first; the rest stay pending.
        min_time_between_triggers: Seconds (at least 60) between runs.
        wait_after_last_change: Seconds (at least 60) without new files before a run.
        state_table: Delta table of each run's keys and the last listing; default
            ``dbxdec_trigger_state`` in the volume's schema, else beside the first output.
        local: The folder a local run lists instead (a path under the project root, or a
            ``file:`` URL).

    Raises:
        DefinitionError: a bad value (one line naming it).
    """

    url: str
    min_time_between_triggers: int | None = None
    wait_after_last_change: int | None = None
    keys: FileKeys | None = None
    max_keys: int | None = None
    state_table: str = ""
    local: str | None = None

    def __init__(
        self,
        url: str,
        *,
        keys: FileKeys | None = None,
        max_keys: int | None = None,
        min_time_between_triggers: int | timedelta | None = None,
        wait_after_last_change: int | timedelta | None = None,
        state_table: str | None = None,
        local: str | Path | None = None,
    ) -> None:
        if not isinstance(url, str) or _URL.fullmatch(url) is None:
            raise DefinitionError(
                f"FileArrival: url={url!r} must be a cloud URL (s3://..., abfss://..., "
                "gs://...) or a /Volumes/... path"
            )
        if keys is not None and not isinstance(keys, KeyFromPath | KeyFromColumn):
            raise DefinitionError(
                f"FileArrival: keys={keys!r} must be KeyFromPath(...) or KeyFromColumn(...)"
            )
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "keys", keys)
        _set_common(
            self,
            "FileArrival",
            max_keys,
            min_time_between_triggers,
            wait_after_last_change,
            state_table or _volume_state_table(url),
            state_table,
        )
        object.__setattr__(self, "local", _local_folder(local))

    def parameters(self) -> dict[str, str]:
        """The job parameters a file-triggered job declares (none without ``keys``)."""
        return file_arrival_parameters() if self.keys is not None else {}


def _volume_state_table(url: str) -> str:
    """``catalog.schema.dbxdec_trigger_state`` of ``/Volumes/catalog/schema/...``, else ``""``."""
    parts = url.split("/")
    if len(parts) > 3 and parts[1] == "Volumes":
        table = f"{parts[2]}.{parts[3]}.dbxdec_trigger_state"
        if TABLE_NAME.fullmatch(table):
            return table
    return ""


def _local_folder(local: str | Path | None) -> str | None:
    """``local`` as an absolute path (a relative one under the declaring project's root)."""
    if local is None:
        return None
    text = str(local) if isinstance(local, str | Path) else ""
    if text.startswith("file:"):
        from urllib.request import url2pathname  # http.client and email: not at import

        text = url2pathname(urlsplit(text).path)
    if not text:
        raise DefinitionError(
            f"FileArrival: local={local!r} must be a folder (a path or a file: URL)"
        )
    path = Path(text)
    if not path.is_absolute():
        path = (caller_project_root(3) or Path.cwd()) / path
    return str(path)


Trigger = TableUpdate | FileArrival


def trigger_of(
    value: object,
    settings: Mapping[str, Any],
    backfill: BackfillDef | None,
    job: str,
    where: str,
) -> Trigger | None:
    """``@job(triggered_by=...)`` checked against the job's backfill; a raw ``trigger={...}``
    setting passes through as it is, with a warning naming the typed values.

    Raises:
        DefinitionError: not a ``TableUpdate``/``FileArrival``, no time-based backfill for
            it, a typed value given as ``trigger=``, or both ``trigger`` and ``triggered_by``.
    """

    def fail(message: str) -> DefinitionError:
        return DefinitionError(message, job=job, location=where)

    raw = settings.get("trigger")
    if isinstance(raw, TableUpdate | FileArrival):
        raise fail(
            f"trigger={type(raw).__name__}(...) is the Databricks job setting: write "
            f"triggered_by={type(raw).__name__}(...)"
        )
    if raw is not None and value is not None:
        raise fail("give triggered_by=... or a raw trigger={...}, not both")
    if isinstance(raw, dict):
        warnings.warn(
            f"job {job!r}: trigger={{...}} is passed to Databricks as is and runs resolve the "
            "key of now; use triggered_by=TableUpdate(...) (or FileArrival(...)) so a "
            "triggered run processes the keys that changed",
            UserWarning,
            stacklevel=4,
        )
    if value is None:
        return None
    if not isinstance(value, TableUpdate | FileArrival):
        raise fail(
            f"triggered_by must be TableUpdate(...) or FileArrival(...), got {type(value).__name__}"
        )
    if isinstance(value, TableUpdate) and not isinstance(backfill, TimeBackfill):
        raise fail(
            "triggered_by=TableUpdate(...) needs a time-based backfill (DailyBackfill, ...): "
            "changed rows map to its keys"
        )
    keyed_files = isinstance(value, FileArrival) and value.keys is not None
    if keyed_files and not isinstance(backfill, TimeBackfill):
        raise fail(
            "triggered_by=FileArrival(keys=...) needs a time-based backfill (DailyBackfill, "
            "...): the files' keys are its keys"
        )
    return value
