"""Whole-file replacement: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def umask_mode(mode: int = 0o666) -> int:
    """``mode`` less the process umask: what ``open()`` gives a new file (``mkstemp``: 0o600)."""
    current = os.umask(0o022)  # reading the umask means setting it; put it back at once
    os.umask(current)
    return mode & ~current


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8, ``\\n`` line ends) in one step: a temporary file in
    the same folder (created if missing), flushed, renamed over ``path``, the folder synced.
    ``mode`` defaults to ``0o600``.

    Raises:
        OSError: the folder cannot be created or written; ``path`` is left as it was.
    """
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
