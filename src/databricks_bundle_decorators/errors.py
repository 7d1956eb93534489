"""The dbxdec error hierarchy. Each error renders itself; the CLI maps it to an exit code.

Exit codes: 1 for a failure of the work itself (definitions, runs), 2 for usage errors
(bad option values, unknown names, missing configuration), 3 for a broken environment
(PySpark, Delta Lake or Java missing: something to install, not something to retry).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DbxdecError(Exception):
    """Base class of errors that dbxdec reports as one clear line."""

    exit_code: int = 1

    def render(self) -> str:
        """The one-line message shown to users."""
        return str(self)


class UsageError(DbxdecError):
    """The user asked for something that cannot be done as asked (exit 2)."""

    exit_code = 2


class EnvironmentProblem(DbxdecError):
    """Something this machine lacks (PySpark, the Delta Lake jars, Java); the message
    says what to install or run (exit 3)."""

    exit_code = 3


class DefinitionError(DbxdecError):
    """A pipeline definition is wrong; the message names job, task and file."""

    def __init__(
        self,
        message: str,
        *,
        job: str | None = None,
        task: str | None = None,
        location: str | None = None,
    ) -> None:
        self.message = message
        self.job = job
        self.task = task
        self.location = location
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.job:
            where.append(f"job {self.job!r}")
        if self.task:
            where.append(f"task {self.task!r}")
        prefix = ", ".join(where)
        suffix = f" ({self.location})" if self.location else ""
        return f"{prefix}: {self.message}{suffix}" if prefix else f"{self.message}{suffix}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest known name, or an empty string."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
