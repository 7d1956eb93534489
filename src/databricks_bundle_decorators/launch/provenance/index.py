"""The provenance index of one table: which commit last wrote each key, with that commit's
provenance record, and where every later commit fell, so that ``dbxdec stale`` answers
without a JVM and in bounded time.

The source of truth is the table's history: every dbxdec commit carries its provenance in
its ``userMetadata`` (:mod:`databricks_bundle_decorators.backfill.wire.provenance`). The
index is a cache of it, kept in the one place dbxdec keeps durable state
(:class:`..ledger.place.Place`, one JSON file per table) and brought up to date on every
read from the commits after the version it has seen; deleted or damaged, it is rebuilt
from the history still in the log. A key whose last commit carried no provenance (a
writer other than dbxdec, a full refresh's swap) is kept with that commit's version and
operation, so ``stale`` can say why it cannot vouch for it.

One file per table: ``{"f": 1, "table", "version", "records": [provenance...],
"keys": {key: record index, or -1}, "foreign": {key: [version, operation]},
"changes": [[version, operation, {column: [values]}, {column: [low, high]}, files]]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backfill.wire.provenance import Provenance, split_provenance
from ...runtime.storage.delta_history import Placement, changes_rows, read_log_commits
from ..ledger.place import Place

PROVENANCE_FOLDER = Path(".dbxdec") / "provenance"
"""Where the index of a project's local tables is kept, under its root (rebuildable from
the tables' history)."""
FORMAT = 1
WHOLE_TABLE = "(table)"
"""The key of an unpartitioned table's one record (it is written whole)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One commit that changed rows: where its files fall (``values`` per partition
    column, ``ranges`` per column every file stated statistics for; neither: unplaced)."""

    version: int
    operation: str
    values: Mapping[str, tuple[str, ...]]
    ranges: Mapping[str, tuple[str, str]]

    def to_json(self) -> list[Any]:
        return [
            self.version,
            self.operation,
            {c: list(v) for c, v in self.values.items()},
            {c: list(r) for c, r in self.ranges.items()},
        ]

    @classmethod
    def from_json(cls, item: list[Any]) -> Change:
        version, operation, values, ranges = item
        return cls(
            int(version),
            str(operation),
            {str(c): tuple(str(x) for x in v) for c, v in values.items()},
            {str(c): (str(r[0]), str(r[1])) for c, r in ranges.items()},
        )

    @classmethod
    def of(cls, version: int, operation: str, placement: Placement | None) -> Change:
        if placement is None:
            return cls(version, operation, {}, {})
        ranges = {c: r for c in placement.ranges if (r := placement.range_of(c)) is not None}
        return cls(
            version,
            operation,
            {c: tuple(sorted(v)) for c, v in placement.values.items()},
            ranges,
        )


@dataclass
class TableIndex:
    """The index of one table (see the module docs)."""

    table: str
    version: int = -1
    records: list[Provenance] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)
    foreign: dict[str, tuple[int, str]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def record(self, key: str) -> Provenance | None:
        """The provenance of ``key``'s last commit (``None``: none, or not written)."""
        at = self.keys.get(key, -1)
        return self.records[at] if at >= 0 else None

    def written(self) -> Iterator[tuple[str, Provenance | None]]:
        """Every key written, with its last commit's provenance (``None``: foreign)."""
        for key, at in self.keys.items():
            yield key, self.records[at] if at >= 0 else None

    def changes_after(self, version: int) -> list[Change]:
        """The commits after ``version`` that changed rows, oldest first."""
        return [c for c in self.changes if c.version > version]

    def to_text(self) -> str:
        document = {
            "f": FORMAT,
            "table": self.table,
            "version": self.version,
            "records": [r.to_json() for r in self.records],
            "keys": self.keys,
            "foreign": {k: list(v) for k, v in self.foreign.items()},
            "changes": [c.to_json() for c in self.changes],
        }
        return json.dumps(document, separators=(",", ":"))

    @classmethod
    def from_text(cls, table: str, text: str | None) -> TableIndex | None:
        """The index in ``text``; ``None`` when missing, damaged or of another format (it
        is then rebuilt from the history)."""
        if not text:
            return None
        try:
            document = json.loads(text)
            if document.get("f") != FORMAT or document.get("table") != table:
                return None
            records = [Provenance.from_json(r) for r in document["records"]]
            if any(r is None for r in records):
                return None
            return cls(
                table,
                int(document["version"]),
                [r for r in records if r is not None],
                {str(k): int(v) for k, v in document["keys"].items()},
                {str(k): (int(v[0]), str(v[1])) for k, v in document["foreign"].items()},
                [Change.from_json(c) for c in document["changes"]],
            )
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def absorb(self, folder: Path) -> bool:
        """Take in the commits of the local table in ``folder`` after :attr:`version`;
        whether there were any."""
        commits = read_log_commits(folder, after=self.version, files=True)
        for commit in commits:
            self.version = max(self.version, commit.version)
            if not changes_rows(commit):
                continue
            change = Change.of(commit.version, commit.operation, commit.placement)
            self.changes.append(change)
            provenance = split_provenance(commit.metadata or "")[1]
            if provenance is not None:
                self.records.append(provenance)
                at = len(self.records) - 1
                for key in provenance.keys or (WHOLE_TABLE,):
                    self.keys[key] = at
                    self.foreign.pop(key, None)
                continue
            for key in self._touched(change):
                self.keys[key] = -1
                self.foreign[key] = (commit.version, commit.operation)
        self._forget_unused()
        return bool(commits)

    def _touched(self, change: Change) -> tuple[str, ...]:
        """The keys a commit without provenance rewrote: the values of the key column
        (the last record's) its files name; every key when it does not say."""
        if not self.records and not self.keys:
            return ()  # not a table dbxdec writes (a source): only its changes count
        column = next((r.column for r in reversed(self.records) if r.column), None)
        if column is None:
            return tuple(self.keys) or (WHOLE_TABLE,)
        if column in change.values:
            return change.values[column]
        return tuple(self.keys)

    def _forget_unused(self) -> None:
        """Drop records no key points at any more (rewritten keys), renumbering."""
        used = sorted(set(self.keys.values()) - {-1})
        if len(used) == len(self.records):
            return
        renumber = {old: new for new, old in enumerate(used)}
        self.records = [self.records[i] for i in used]
        self.keys = {k: renumber.get(v, -1) for k, v in self.keys.items()}


def index_name(table: str) -> str:
    """The index file of ``table`` (its parts are letters, digits and ``_``: checked by
    ``TableName.parse``)."""
    return f"{table.lower()}.json"


def read_index(place: Place, table: str, folder: Path) -> TableIndex:
    """The index of the local table ``table`` in ``folder``, brought up to date from its
    history and saved back when it moved (rebuilt when missing or damaged)."""
    index = TableIndex.from_text(table, place.read(index_name(table))) or TableIndex(table)
    if index.absorb(folder):
        place.make()
        place.write(index_name(table), index.to_text())
    return index
