"""Which files changed between two listings, and the keys their paths name (no Spark).

A listing maps each file's path to its stamp: size in bytes and modification time. A
file is **new or changed** when its path is not in the earlier listing or its stamp
differs; it is **gone** when its path is in the earlier listing only. Gone files name
no keys to process (see :mod:`.file_arrival` for why).

Example:
    >>> before = {"in/date=2024-03-15/a.json": (10, 1)}
    >>> after = {"in/date=2024-03-15/a.json": (12, 2), "in/date=2024-03-19/b.json": (5, 3)}
    >>> changed, gone = changed_files(before, after)
    >>> sorted(changed), gone
    (['in/date=2024-03-15/a.json', 'in/date=2024-03-19/b.json'], ())
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ...backfill.time_backfill import TimeBackfill
from ...definitions.file_keys import KeyFromPath
from ..core.errors import TaskRunError
from .trigger_state import FileStamp

Listing = Mapping[str, FileStamp]


def changed_files(
    before: Listing | None, after: Listing
) -> tuple[dict[str, FileStamp], tuple[str, ...]]:
    """The files of ``after`` that are new or changed since ``before`` (every file
    when ``before`` is ``None``: no run was processed yet), and the paths gone."""
    if before is None:
        return dict(after), ()
    changed = {p: s for p, s in after.items() if before.get(p) != s}
    gone = tuple(sorted(p for p in before if p not in after))
    return changed, gone


def relative_path(path: str, root: str) -> str:
    """``path`` below the monitored location ``root`` (the listing's paths carry a
    scheme, ``file:/...`` or ``dbfs:/Volumes/...``, that ``root`` may not have).

    Example:
        >>> relative_path("dbfs:/Volumes/c/s/v/in/date=2024-03-15/a.json", "/Volumes/c/s/v/in/")
        'date=2024-03-15/a.json'
        >>> relative_path("s3://bucket/in/x.csv", "s3://bucket/in")
        'x.csv'
    """
    parsed = urlsplit(root)
    folder = parsed.path if parsed.scheme else root
    folder = "/" + folder.strip("/") + "/" if folder.strip("/") else "/"
    at = path.find(folder)
    return path[at + len(folder) :] if at >= 0 else path


def path_keys(
    keys: KeyFromPath, paths: Iterable[str], root: str, backfill: TimeBackfill
) -> tuple[set[str], list[str]]:
    """The keys the paths name (by ``keys``'s pattern, below ``root``), and the paths
    that match no pattern (they have no key).

    Raises:
        TaskRunError: a path's key text is not a key of ``backfill`` (one line naming
            the file and the expected format).
    """
    found: set[str] = set()
    unmatched: list[str] = []
    for path in paths:
        text = keys.key_text(relative_path(path, root))
        if text is None:
            unmatched.append(path)
            continue
        try:
            backfill.cadence.parse(text, what="key")
        except ValueError as exc:
            raise TaskRunError(
                f"file {path}: {exc} (taken by KeyFromPath({keys.pattern!r})); rename the "
                "file or change the pattern"
            ) from None
        found.add(text)
    return found, sorted(unmatched)
