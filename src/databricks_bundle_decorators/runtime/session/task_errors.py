"""What a failed task says: Spark's message once and short, and the user's own frames.

An error in task code used to flood the terminal (issue 25): the message of a Spark
``AnalysisException`` carries the whole logical plan after its first line, the full
traceback runs through PySpark and py4j internals and ends with the message again, and
PySpark's query-context logger prints it once more as a line of JSON thousands of
characters long. The first line of a Spark error is its condition, message and
suggestion (``[UNRESOLVED_COLUMN.WITH_SUGGESTION] ... Did you mean one of the
following? [...]. SQLSTATE: 42703``); the plan that follows is for Spark developers.
"""

from __future__ import annotations

import logging
import sysconfig
import traceback
from pathlib import Path

MAX_MESSAGE = 480
"""A task's error is cut to this many characters: a line of a terminal or a log stays
under 500 with its prefix."""

_QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")
"""PySpark's loggers that print every analysis error as one JSON line with its query
context (pyspark/errors/exceptions/base.py, ``PySparkException._log_exception``)."""

_PACKAGE = Path(__file__).resolve().parents[2]
"""``databricks_bundle_decorators/`` (this file is in ``runtime/session/``): its frames are
dbxdec's, not the user's."""
_LIBRARIES = tuple(
    Path(p).resolve()
    for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def _from_spark(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("pyspark", "py4j")


def error_text(exc: BaseException) -> str:
    """``exc``'s message for a one-line error: a Spark error's first line (its plan
    dropped), at most :data:`MAX_MESSAGE` characters.

    >>> error_text(ValueError("x" * 600))[-3:], len(error_text(ValueError("x" * 600)))
    ('...', 480)
    """
    text = str(exc).strip()
    if _from_spark(exc):
        text = text.splitlines()[0].rstrip(";") if text else text
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _users(filename: str) -> bool:
    """Whether a frame's file is the user's: not the standard library, not an
    installed package (PySpark, py4j), not dbxdec itself."""
    try:
        path = Path(filename).resolve()
    except (OSError, RuntimeError):
        return False
    if not path.is_file() or path.is_relative_to(_PACKAGE):
        return False
    return not any(path.is_relative_to(lib) for lib in _LIBRARIES)


def user_frames(exc: BaseException) -> list[str]:
    """The frames of ``exc``'s traceback in the user's files, formatted (file, line,
    function, source line), outermost first; no exception line (the one-line error
    says it)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename)]
    return traceback.format_list(frames)


def quiet_query_context_loggers() -> None:
    """Silence PySpark's query-context loggers (local sessions only: on Databricks the
    driver log is the place for them). A task's error already carries the message."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark before 4.0 has no such logger
        return
    for name in _QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
