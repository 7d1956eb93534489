"""Problems with dbxdec's own files (``.dbxdec/``), told in a few words.

A full disk, a read-only file system or a file where a folder should be are not bugs of
the backfill: they end the command with :class:`~..errors.LocalStateProblem` (exit 6)
and one line naming the path and what to do, never a traceback.
"""

from __future__ import annotations

import errno
import secrets
from pathlib import Path

from ...atomic import write_atomically
from ...errors import LocalStateProblem

_LOCAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM}


def check_writable(folder: Path) -> None:
    """Make sure files can be written in ``folder`` before any work starts (folders
    created for the check are removed again).

    Raises:
        LocalStateProblem: it cannot be created or written (a file in its way, a
            read-only file system, a full disk).
    """
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    probe = folder / f".write-check-{secrets.token_hex(4)}"
    try:
        write_atomically(probe, "{}\n")
        probe.unlink()
        for created in missing:  # deepest first: a check leaves nothing behind
            created.rmdir()
    except OSError as exc:
        raise LocalStateProblem(
            f"cannot write backfill ledgers to {folder} ({os_reason(exc, folder)}): make it "
            "a writable folder on a disk with free space; nothing was launched"
        ) from None


def os_reason(exc: OSError, folder: Path) -> str:
    """Why reading or writing in ``folder`` failed, in a few words."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        in_the_way = next((p for p in (folder, *folder.parents) if p.is_file()), None)
        if in_the_way is not None:
            return f"{in_the_way} is a file, not a folder"
    return f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else one_line(exc)


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, at most 200 characters."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def os_problem(exc: BaseException) -> LocalStateProblem | None:
    """The one line for a local file that cannot be written (full disk, read-only file
    system, no permission), or ``None`` for any other error."""
    if not isinstance(exc, OSError) or exc.errno not in _LOCAL_ERRNOS:
        return None
    where = f"{exc.filename}: " if exc.filename else ""
    return LocalStateProblem(
        f"a local file cannot be used ({where}[Errno {exc.errno}] {exc.strerror}): free disk "
        "space or fix the permissions, then run the command again"
    )
