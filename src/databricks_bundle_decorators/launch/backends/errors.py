"""Every error class of the launcher: :class:`~..errors.DbxdecError` subclasses end a
command with their exit code; the plain exceptions travel from a backend to the scheduler.
And whether this environment can run slices locally (:func:`require_local_spark`),
checked before any local work so a missing extra is one line saying what to install.
"""

from __future__ import annotations

import importlib.util

from ...errors import DbxdecError, EnvironmentProblem


class BackfillFailed(DbxdecError):
    """Some runs of the backfill failed (exit 1); the message has the rerun command."""


class BackfillInterrupted(DbxdecError):
    """The backfill was interrupted (exit 130); the message has the resume command."""

    exit_code = 130


class BackfillClaimLost(DbxdecError):
    """Another launcher took the backfill's claim over (``--force`` after it expired): no
    more runs were launched, those in flight were watched to their end (exit 7).
    """

    exit_code = 7


class UndoFailed(DbxdecError):
    """The undo run on Databricks did not succeed (exit 1)."""


class PresenceFailed(DbxdecError):
    """The presence run of ``catchup --by data`` did not tell which keys have data (exit 1)."""


class MissingSparkExtra(EnvironmentProblem):
    """PySpark or Delta Lake is not installed (exit 3: something to install)."""


class SubmitRejected(Exception):
    """The backend refused the submission; no run was created (``fatal``: none can succeed,
    e.g. credentials or a deleted job, so the backfill stops launching).
    """

    def __init__(self, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


class BackendUnavailable(Exception):
    """The backend did not answer (connection, DNS, timeouts, 429/503 after the client's
    retries): not counted against the slice; the scheduler keeps watching, re-sends with
    the same token, and reports since when the workspace is unreachable.
    """


# The pair dbxdec's `spark` extra pins (pyproject.toml; tests/test_docs.py keeps them equal),
# named directly: dbxdec itself is not on the package index yet.
SPARK_EXTRA_INSTALL = 'pip install "pyspark==4.0.1" "delta-spark==4.0.1"'
LOCAL_SPARK_MODULES = ("pyspark", "delta")
"""Top-level modules local runs import: PySpark's, and delta-spark's (``delta``)."""


def missing_local_spark_modules() -> list[str]:
    """The modules of :data:`LOCAL_SPARK_MODULES` that cannot be imported here."""
    return [name for name in LOCAL_SPARK_MODULES if importlib.util.find_spec(name) is None]


def require_local_spark() -> None:
    """Raise unless PySpark and Delta Lake are installed.

    Raises:
        MissingSparkExtra: one is missing; the message says what to install.
    """
    missing = missing_local_spark_modules()
    if missing:
        raise MissingSparkExtra(
            f"local runs need PySpark and Delta Lake ({' and '.join(missing)} not installed): "
            f"{SPARK_EXTRA_INSTALL}"
        )
