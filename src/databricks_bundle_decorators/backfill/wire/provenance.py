"""What a key was computed from, as its data commit carries it: the provenance record a
write appends to its Delta ``userMetadata`` and every reader of provenance decodes.

The record is written by the same commit that writes the keys' rows, so a key has the
provenance of the commit that last wrote it, or none (there is no second store to keep in
step: the index ``dbxdec stale`` reads is rebuilt from the tables' history). Its text is
one compact JSON object after :data:`PROVENANCE_MARK`; the part before it is the commit's
identity as ``runtime/storage/table_name.commit_metadata`` makes it, unchanged, so undo and
the key-change reports read old and new commits alike.

Example:
    >>> p = Provenance("sales", "clean", "77-0", code="1a2b3c4d5e6f7a8b", dbxdec="0.1.0",
    ...                reads={"main.raw.orders": 5}, keys=("2024-01-02",), column="day")
    >>> text = with_provenance("dbxdec:sales:clean:77-0", p)
    >>> split_provenance(text)[1] == p
    True
    >>> split_provenance("dbxdec:sales:clean:77-0")
    ('dbxdec:sales:clean:77-0', None)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PROVENANCE_MARK = " dbxdec-provenance="
"""Between a commit's identity and its provenance JSON in ``userMetadata``."""
FORMAT = 1
"""The record's schema version (``"f"`` in the JSON); a reader skips other formats."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """What one commit of a task's output was computed from.

    Attributes:
        job: The job that ran.
        task: The task whose output the commit wrote.
        run_id: The job run's id.
        code: The task's code fingerprint
            (:func:`databricks_bundle_decorators.definitions.fingerprint.task_fingerprint`).
        dbxdec: dbxdec's version in the run.
        reads: Every Delta table the run read (sources and IoManager inputs), lowercase
            name -> the version the read was pinned to.
        keys: The keys the commit wrote.
        column: The written table's key partition column (``None``: unpartitioned).
        checks: The checks judged before the commit (a commit happens only when every
            error-severity check passed); ``warned``: those that failed as warnings.
        backfill_id: The ``dbxdec backfill`` the run belonged to (``""``: none).
    """

    job: str
    task: str
    run_id: str
    code: str
    dbxdec: str
    reads: Mapping[str, int] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    column: str | None = None
    checks: tuple[str, ...] = ()
    warned: tuple[str, ...] = ()
    backfill_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as its JSON object (short names: it rides in every commit)."""
        record: dict[str, Any] = {
            "f": FORMAT,
            "job": self.job,
            "task": self.task,
            "run": self.run_id,
            "code": self.code,
            "dbxdec": self.dbxdec,
            "reads": {name: int(v) for name, v in sorted(self.reads.items())},
            "keys": list(self.keys),
        }
        optional = {
            "column": self.column,
            "checks": list(self.checks),
            "warned": list(self.warned),
            "backfill": self.backfill_id,
        }
        record.update({k: v for k, v in optional.items() if v})
        return record

    def key_json(self) -> dict[str, Any]:
        """The record as one key's provenance: :meth:`to_json` without the commit's other
        keys (shown per key, they would repeat every key of the commit at each one)."""
        record = self.to_json()
        del record["keys"]
        return record

    @classmethod
    def from_json(cls, record: object) -> Provenance | None:
        """The record, or ``None`` when it is not one of this format (never raises)."""
        if not isinstance(record, dict) or record.get("f") != FORMAT:
            return None
        try:
            reads = record.get("reads") or {}
            return cls(
                job=_text(record["job"]),
                task=_text(record["task"]),
                run_id=_text(record["run"]),
                code=_text(record["code"]),
                dbxdec=_text(record["dbxdec"]),
                reads={_text(k): _version(v) for k, v in dict(reads).items()},
                keys=_texts(record.get("keys") or ()),
                column=_text(record["column"]) if record.get("column") else None,
                checks=tuple(_text(c) for c in record.get("checks") or ()),
                warned=tuple(_text(c) for c in record.get("warned") or ()),
                backfill_id=_text(record.get("backfill") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _texts(values: object) -> tuple[str, ...]:
    """A list of strings as a tuple (one pass: a commit's record lists up to thousands)."""
    if not isinstance(values, list | tuple):
        raise TypeError("not a list")
    texts = tuple(values)
    if not all(type(v) is str for v in texts):
        raise TypeError("not a list of strings")
    return texts


def _version(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a version")
    return value


def with_provenance(metadata: str, provenance: Provenance | None) -> str:
    """``metadata`` (a commit's identity) with ``provenance`` appended."""
    if provenance is None:
        return metadata
    text = json.dumps(provenance.to_json(), separators=(",", ":"), ensure_ascii=True)
    return f"{metadata}{PROVENANCE_MARK}{text}"


def split_provenance(metadata: str) -> tuple[str, Provenance | None]:
    """``(identity part, provenance)`` of a commit's ``userMetadata``; a damaged or
    foreign record reads as ``None``."""
    identity, mark, text = metadata.partition(PROVENANCE_MARK)
    if not mark:
        return metadata, None
    try:
        return identity, Provenance.from_json(json.loads(text))
    except ValueError:
        return identity, None
