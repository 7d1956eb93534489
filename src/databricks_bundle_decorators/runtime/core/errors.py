"""Errors of a task run (exit 1), each one line naming the job, task and keys."""

from __future__ import annotations

from ...errors import DbxdecError


class TaskRunError(DbxdecError):
    """A task run failed."""


class OutputRejected(TaskRunError):
    """The output has rows outside the run's windows; nothing was written."""


class CheckFailed(TaskRunError):
    """A per-slice check failed; nothing was written."""


class InputMissing(TaskRunError):
    """An upstream table has not been written yet."""
