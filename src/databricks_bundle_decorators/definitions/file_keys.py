"""Where a file-arrival run takes its keys: each new file's path, or a column's values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..errors import DefinitionError

FileFormat = Literal["parquet", "json", "csv", "orc"]
FILE_FORMATS: tuple[FileFormat, ...] = ("parquet", "json", "csv", "orc")
KEY_PLACEHOLDER = "{key}"
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# A ``{key}`` placeholder stands for one path segment's text (no ``/``).
_KEY_TEXT = r"(?P<key>[^/]+)"


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
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "regex", _compile(pattern))

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


def _compile(pattern: str) -> re.Pattern[str]:
    if "(?P<key>" in pattern:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise DefinitionError(
                f"KeyFromPath({pattern!r}) is not a regular expression ({exc}); fix it or "
                f"use a template with {KEY_PLACEHOLDER}"
            ) from None
        return regex
    if pattern.count(KEY_PLACEHOLDER) != 1:
        raise DefinitionError(
            f"KeyFromPath({pattern!r}) needs exactly one {KEY_PLACEHOLDER} (e.g. 'date={{key}}/') "
            "or a regular expression with a (?P<key>...) group"
        )
    before, _, after = pattern.partition(KEY_PLACEHOLDER)
    return re.compile(re.escape(before) + _KEY_TEXT + re.escape(after))


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
        if not isinstance(column, str) or _COLUMN.fullmatch(column) is None:
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
