"""What a failed task says: Spark's message once and short (its first line: condition,
message, suggestion; not the logical plan after it), and the user's own frames.
"""

from __future__ import annotations

import logging
import sysconfig
import traceback
from pathlib import Path

MAX_MESSAGE = 480  # a line stays under 500 characters with its prefix
# PySpark's loggers that print every analysis error as a JSON line with its query context
# (pyspark/errors/exceptions/base.py, ``PySparkException._log_exception``)
_QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")
_PACKAGE = Path(__file__).resolve().parents[2]  # dbxdec's frames are not the user's
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
    """Whether a frame's file is the user's: not the standard library, an installed
    package or dbxdec."""
    try:
        path = Path(filename).resolve()
    except (OSError, RuntimeError):
        return False
    if not path.is_file() or path.is_relative_to(_PACKAGE):
        return False
    return not any(path.is_relative_to(lib) for lib in _LIBRARIES)


def user_frames(exc: BaseException) -> list[str]:
    """The formatted frames of ``exc``'s traceback in the user's files, outermost first,
    without the exception line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename)]
    return traceback.format_list(frames)


def quiet_query_context_loggers() -> None:
    """Silence PySpark's query-context loggers (local sessions only; a task's error
    carries the message)."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark before 4.0 has no such logger
        return
    for name in _QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
