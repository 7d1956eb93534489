"""Table names: a three-part Unity Catalog name, its local folder, and the identity a
commit carries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.wire.provenance import split_provenance
from ..core.predicates import quote_identifier
from .formats import TableRef

if TYPE_CHECKING:
    from ...definitions.contracts import RunEnvironment

_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


@dataclass(frozen=True, slots=True)
class TableName:
    """A three-part Unity Catalog name ``catalog.schema.table``; locally the folder
    ``<warehouse>/<catalog>/<schema>/<table>/``."""

    catalog: str
    schema: str
    table: str

    @classmethod
    def parse(cls, name: str) -> TableName:
        """Parse ``catalog.schema.table``.

        Raises:
            ValueError: not three dot-separated parts of A-Z a-z 0-9 _.
        """
        parts = name.split(".") if isinstance(name, str) else []
        if len(parts) != 3 or not all(_PART.fullmatch(part) for part in parts):
            raise ValueError(
                f"table name {name!r} must be catalog.schema.table, each part a letter or _ "
                "then letters, digits or _ (e.g. 'main.sales.daily_orders')"
            )
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.table}"

    @property
    def quoted(self) -> str:
        """The name with each part backtick-quoted, for SQL and ``saveAsTable``."""
        return ".".join(quote_identifier(p) for p in (self.catalog, self.schema, self.table))

    def local_path(self, warehouse: Path) -> Path:
        """The table's folder under a local warehouse."""
        return warehouse / self.catalog / self.schema / self.table

    def ref(self, environment: RunEnvironment) -> TableRef:
        """The table in a run's environment: by catalog name, or locally by folder."""
        path = None if environment.databricks else self.local_path(environment.warehouse)
        return TableRef(str(self), self.quoted, path)


COMMIT_ID_PREFIX = "dbxdec:"
BACKFILL_MARK = ":backfill="


def commit_identity(job_name: str, task_key: str, run_id: str) -> str:
    """Who wrote a commit: Delta's ``txnAppId`` (one per run, so a retried attempt is
    skipped) and the start of its ``userMetadata``.

    Example:
        >>> commit_identity("sales", "clean", "550315892394120-0")
        'dbxdec:sales:clean:550315892394120-0'
    """
    return f"{COMMIT_ID_PREFIX}{job_name}:{task_key}:{run_id}"


def commit_metadata(identity: str, backfill_id: str) -> str:
    """A commit's ``userMetadata``: its identity, then, in a run of a backfill, the
    backfill's id (``dbxdec backfill undo`` finds the backfill's commits by it).

    Example:
        >>> commit_metadata("dbxdec:sales:clean:5503-0", "sales-20240601T120000-1a2b")
        'dbxdec:sales:clean:5503-0:backfill=sales-20240601T120000-1a2b'
        >>> split_metadata(commit_metadata("dbxdec:sales:clean:5503-0", ""))
        ('dbxdec:sales:clean:5503-0', '')
    """
    return f"{identity}{BACKFILL_MARK}{backfill_id}" if backfill_id else identity


def split_metadata(metadata: str) -> tuple[str, str]:
    """``(identity, backfill id)`` of a commit's ``userMetadata``, the inverse of
    :func:`commit_metadata`; a provenance record after the identity is left out."""
    metadata = split_provenance(metadata)[0]
    identity, mark, backfill_id = metadata.rpartition(BACKFILL_MARK)
    return (identity, backfill_id) if mark and identity else (metadata, "")
