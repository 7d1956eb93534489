"""Outcomes of a backfill that end the command with a non-zero exit code."""

from __future__ import annotations

from ..errors import DbxdecError


class BackfillFailed(DbxdecError):
    """Some runs of the backfill failed (exit 1); the message has the rerun command."""


class BackfillInterrupted(DbxdecError):
    """The backfill was interrupted (exit 130); the message has the resume command."""

    exit_code = 130
