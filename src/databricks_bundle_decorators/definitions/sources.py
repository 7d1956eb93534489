"""Source tables a job reads from outside dbxdec (``ORDERS.read()`` inside a task returns the
rows of the run's key windows; the runtime installs the reader), and :class:`SourceLocation`.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FunctionType
from typing import Any

from ..errors import DefinitionError

StandInFunction = Callable[[Any, datetime, datetime], Any]
"""``(spark, start, end) -> DataFrame``: rows of a local stand-in for ``[start, end)``."""

SEED_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A file and line of user code."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> SourceLocation:
        """The location where ``fn`` is defined."""
        # A plain function wraps nothing: no need for inspect.unwrap's attribute probes.
        plain = type(fn) is FunctionType and "__wrapped__" not in fn.__dict__
        target = fn if plain else inspect.unwrap(fn)
        code = getattr(target, "__code__", None)
        if code is not None:
            known = _KNOWN.get((code.co_filename, code.co_firstlineno))
            if known is not None and type(known) is cls:
                return known
        try:
            file = inspect.getsourcefile(target) or inspect.getfile(target)
        except TypeError:
            file = "<unknown>"
        location = cls(file, code.co_firstlineno if code is not None else 0)
        if code is not None and file == code.co_filename:
            _KNOWN[(file, location.line)] = location
        return location

    @classmethod
    def raised_at(cls, exc: BaseException) -> SourceLocation | None:
        """The user's line that led to ``exc``: the innermost frame of its traceback that is
        not one of dbxdec's own files (a ``DailyBackfill(tz=...)`` refused inside dbxdec is
        the user's line that called it) nor the standard library's; an installed package's
        only when the project itself is installed. ``None`` without a traceback."""

        def place(frame: traceback.FrameSummary) -> str:
            return str(Path(frame.filename).resolve())

        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename
        ]
        theirs = [
            f
            for f in frames
            if not f.filename.startswith("<") and not place(f).startswith((_OWN, _STDLIB))
        ]
        preferred = [f for f in theirs if not place(f).startswith(_INSTALLED)] or theirs or frames
        if not preferred:
            return None
        return cls(preferred[-1].filename, preferred[-1].lineno or 0)


_OWN = str(Path(__file__).resolve().parents[1])  # dbxdec's package folder
_STDLIB = str(Path(sysconfig.get_path("stdlib")).resolve())
_INSTALLED = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
)

_KNOWN: dict[tuple[str, int], SourceLocation] = {}
"""Locations by file and line, cached: ``inspect.getsourcefile`` stats the file each call."""


SourceReader = Callable[["Source"], Any]
"""Reads a source for the running task (installed by the runtime)."""

_READER: ContextVar[SourceReader | None] = ContextVar("dbxdec_source_reader", default=None)


@contextlib.contextmanager
def use_source_reader(reader: SourceReader) -> Iterator[None]:
    """Make ``reader`` serve :meth:`Source.read` while a task runs."""
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)


@dataclass(frozen=True, slots=True)
class Source:
    """A table a job reads, with its event-time column and its local stand-in.

    Attributes:
        name: ``catalog.schema.table``, as on Databricks.
        event_time: Column placing a row in time (``TIMESTAMP`` or ``DATE``); reads keep
            the rows inside the run's windows. ``None`` reads every row.
        local: A seed file (relative to ``project_root``) or a function
            ``(spark, start, end) -> DataFrame``; ``None``: the local table of that name.
        project_root: The nearest folder above the declaring module with a ``pyproject.toml``.
        static_column: For a job with ``backfill=MultiBackfill(...)`` (e.g. region x day):
            the column holding the static value; reads keep the rows of the run's static
            keys too. ``None``: filtered by time only (every static value is read).
    """

    name: str
    event_time: str | None = None
    local: str | Path | StandInFunction | None = None
    project_root: Path | None = None
    static_column: str | None = None

    @property
    def seed_path(self) -> Path | None:
        """The seed file of a file stand-in, resolved; ``None`` for other stand-ins."""
        if self.local is None or callable(self.local):
            return None
        path = Path(self.local)
        if not path.is_absolute():
            path = (self.project_root or Path.cwd()) / path
        return path

    def read(self) -> Any:
        """The rows of this run's windows (lookback included), as a Spark DataFrame.

        Raises:
            RuntimeError: called outside a task run.
        """
        reader = _READER.get()
        if reader is None:
            raise RuntimeError(
                f"source {self.name}: read() works inside a task run (dbxdec-run on "
                "Databricks, or a local run); outside one, read the table directly"
            )
        return reader(self)


def source(
    name: str,
    *,
    event_time: str | None = None,
    local: str | Path | StandInFunction | None = None,
    static_column: str | None = None,
) -> Source:
    """Declare a source table.

    ``read()`` keeps the rows whose ``event_time`` is inside the run's windows and, with
    ``static_column`` (jobs with ``backfill=MultiBackfill(...)`` only), whose static value
    is one of the run's static keys (:func:`~databricks_bundle_decorators.get_static_keys`).

    Example:
        >>> ORDERS = source("samples.tpch.orders", event_time="o_orderdate",
        ...                 local="seeds/orders.csv")
        >>> ORDERS.name
        'samples.tpch.orders'
        >>> SALES = source("main.shop.sales", event_time="day", static_column="region")
        >>> SALES.static_column
        'region'

    Raises:
        DefinitionError: a malformed name, column or stand-in (named in the message).
    """
    parts = name.split(".") if isinstance(name, str) else []
    if len(parts) != 3 or not all(_PART.fullmatch(p) for p in parts):
        raise DefinitionError(
            f"source name {name!r} must be catalog.schema.table, each part a letter or _ then "
            "letters, digits or _ (e.g. 'samples.tpch.orders')"
        )
    if event_time is not None and (
        not isinstance(event_time, str) or COLUMN_NAME.fullmatch(event_time) is None
    ):
        raise DefinitionError(f"source {name}: event_time {event_time!r} is not a column name")
    if static_column is not None and (
        not isinstance(static_column, str) or COLUMN_NAME.fullmatch(static_column) is None
    ):
        raise DefinitionError(
            f"source {name}: static_column {static_column!r} is not a column name"
        )
    seed_ok = isinstance(local, str | Path) and Path(local).suffix.lower() in SEED_SUFFIXES
    if local is not None and not callable(local) and not seed_ok:
        raise DefinitionError(
            f"source {name}: local={local!r} must be a seed file ending in "
            f"{', '.join(SEED_SUFFIXES)} or a function (spark, start, end) -> DataFrame"
        )
    return Source(name, event_time, local, caller_project_root(), static_column)


def caller_project_root(depth: int = 2) -> Path | None:
    """The project root of the module that called :func:`source` (the frame ``depth``
    levels up: ``2`` is the caller of the function that calls this one)."""
    frame = sys._getframe(depth)  # source() -> its caller
    file = frame.f_globals.get("__file__")
    if not isinstance(file, str):
        return None
    folder = Path(file).resolve().parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return folder


def check_sources(sources: object, job: str, where: str) -> tuple[Source, ...]:
    """``@job(sources=...)`` as a tuple of distinct sources.

    Raises:
        DefinitionError: not a list of :func:`source` declarations, or a name twice.
    """
    if sources is None:
        return ()
    items = list(sources) if isinstance(sources, list | tuple) else None
    if items is None or not all(isinstance(s, Source) for s in items):
        raise DefinitionError(
            "sources must be a list of source(...) declarations", job=job, location=where
        )
    names = [s.name for s in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DefinitionError(f"source {twice[0]} is declared twice", job=job, location=where)
    return tuple(items)
