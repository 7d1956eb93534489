"""Every error class of the launcher, in one place.

The :class:`~..errors.DbxdecError` subclasses end a command with their exit code; the
plain exceptions travel between a backend and the scheduler, which decides what they
mean for the backfill (stop launching, retry, say the workspace is unreachable).
"""

from __future__ import annotations

from ...errors import DbxdecError, EnvironmentProblem


class BackfillFailed(DbxdecError):
    """Some runs of the backfill failed (exit 1); the message has the rerun command."""


class BackfillInterrupted(DbxdecError):
    """The backfill was interrupted (exit 130); the message has the resume command."""

    exit_code = 130


class BackfillClaimLost(DbxdecError):
    """Another launcher took the backfill's claim over (``--force`` after it expired):
    it launched no more runs and watched those in flight to their end (exit 7)."""

    exit_code = 7


class UndoFailed(DbxdecError):
    """The undo run on Databricks did not succeed (exit 1)."""


class PresenceFailed(DbxdecError):
    """The presence run on Databricks (``catchup --by data``) did not tell which keys
    have data (exit 1)."""


class MissingSparkExtra(EnvironmentProblem):
    """PySpark or Delta Lake is not installed (exit 3, a broken environment: the fix is
    something to install)."""


class SubmitRejected(Exception):
    """The backend refused the submission; no run was created.

    ``fatal``: no later submission can succeed either (credentials, permissions, a
    deleted job), so the backfill stops launching.
    """

    def __init__(self, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


class BackendUnavailable(Exception):
    """The backend did not answer (connection refused, a DNS failure, timeouts, 429/503
    after the client's own retries): nothing is known about the request.

    Not the request's fault, so the scheduler does not count it against the slice: it
    keeps watching the runs in flight, re-sends a submission with the same idempotency
    token, and reports since when the workspace has been unreachable.
    """
