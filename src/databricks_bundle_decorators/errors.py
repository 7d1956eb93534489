"""The dbxdec error hierarchy: each error renders itself and names its ``exit_code``
(:data:`EXIT_CODES`); the CLI maps it to the exit code at one point.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

EXIT_CODES: Mapping[int, str] = {
    0: "success",
    1: "the work failed (a definition, a run, a slice of a backfill)",
    2: "usage error (an option, a name, missing configuration, a refused rerun)",
    3: "something to install (PySpark, Delta Lake jars, Java)",
    4: "the workspace rejected the credentials or a permission is missing",
    5: "workspace or --spark-remote server unreachable (closed port, DNS, timeout, not Databricks)",
    6: "local state unwritable or damaged (.dbxdec folder, full disk, ledger file)",
    7: "the backfill's claim on its keys was taken over by another launcher; it stopped",
    130: "interrupted (Ctrl-C); a backfill prints its --resume command",
}
"""What each exit code of ``dbxdec`` means; the error classes below carry codes 1-6
(7 is ``launch``'s ``BackfillClaimLost``)."""


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
    """Something this machine lacks (PySpark, Delta Lake jars, Java): what to install (exit 3)."""

    exit_code = 3


class WorkspaceRejected(DbxdecError):
    """The workspace refused: rejected credentials (401) or a missing permission (403) (exit 4)."""

    exit_code = 4


class WorkspaceUnreachable(DbxdecError):
    """No answer from the workspace: refused, unknown host, timeout, not Databricks (exit 5)."""

    exit_code = 5


class LocalStateProblem(DbxdecError):
    """dbxdec's own files cannot be written or read (``.dbxdec``, full disk, ledger) (exit 6)."""

    exit_code = 6


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
        names = [
            f"{kind} {name!r}" for kind, name in (("job", self.job), ("task", self.task)) if name
        ]
        text = f"{', '.join(names)}: {self.message}" if names else self.message
        return f"{text} ({self.location})" if self.location else text


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun`` in the form the number wants.

    >>> counted(1, "run"), counted(2, "run"), counted(0, "key"), counted(2, "entry", "entries")
    ('1 run', '2 runs', '0 keys', '2 entries')
    """
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or noun + 's'}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest known name, or an empty string."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
