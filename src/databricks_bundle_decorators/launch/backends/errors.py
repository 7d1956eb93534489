"""Every error class of the launcher: :class:`~..errors.DbxdecError` subclasses end a
command with their exit code; the plain exceptions travel from a backend to the scheduler.
"""

from __future__ import annotations

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
