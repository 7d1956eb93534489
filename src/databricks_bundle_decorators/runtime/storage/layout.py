"""A Delta table's declared layout: table properties and liquid clustering, applied by
``CREATE TABLE`` before the first write and checked, never changed, when the table
exists (a difference is one line, and nothing is written). A clustered table is not
partitioned (Delta does not combine them); ``replaceWhere`` on its key column still
replaces exactly the run's keys.

Example:
    >>> layout = TableLayout.declare({"delta.logRetentionDuration": "interval 60 days"},
    ...                              ["event_date"])
    >>> layout.create_sql("delta.`/wh/t`", "`event_date` STRING,`n` INT", None)
    "CREATE TABLE IF NOT EXISTS delta.`/wh/t` (`event_date` STRING,`n` INT) USING delta \
CLUSTER BY (`event_date`) TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days')"
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.predicates import check_column, quote_identifier, quote_literal

_PROPERTY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}")


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Table properties and clustering columns a table must have."""

    properties: Mapping[str, str] = field(default_factory=dict)
    cluster_by: tuple[str, ...] = ()

    @classmethod
    def declare(
        cls, properties: Mapping[str, str] | None, cluster_by: Sequence[str] | None
    ) -> TableLayout:
        """The layout a definition asks for, validated (raises ``ValueError``)."""
        checked: dict[str, str] = {}
        for name, value in (properties or {}).items():
            if not isinstance(name, str) or _PROPERTY.fullmatch(name) is None:
                raise ValueError(
                    f"table_properties: {name!r} is not a table property name "
                    "(letters, digits, '_', '.', '-')"
                )
            if not isinstance(value, str):
                raise ValueError(
                    f"table_properties: the value of {name!r} must be a string, "
                    f"got {type(value).__name__}"
                )
            checked[name] = value
        if isinstance(cluster_by, str):
            raise ValueError("cluster_by must be a list of column names, not a string")
        columns = tuple(check_column(c, what="cluster_by column") for c in cluster_by or ())
        if len(set(columns)) != len(columns):
            raise ValueError(f"cluster_by names a column twice: {list(columns)}")
        return cls(checked, columns)

    @property
    def declared(self) -> bool:
        """Whether the table needs an explicit ``CREATE TABLE``."""
        return bool(self.properties or self.cluster_by)

    def create_sql(
        self, qualified: str, columns_ddl: str, partition_column: str | Sequence[str] | None
    ) -> str:
        """The ``CREATE TABLE IF NOT EXISTS`` of an empty table with this layout."""
        sql = f"CREATE TABLE IF NOT EXISTS {qualified} ({columns_ddl}) USING delta"
        if self.cluster_by:
            sql += f" CLUSTER BY ({', '.join(quote_identifier(c) for c in self.cluster_by)})"
        elif partition_column:
            columns = (partition_column,) if isinstance(partition_column, str) else partition_column
            sql += f" PARTITIONED BY ({', '.join(quote_identifier(c) for c in columns)})"
        if self.properties:
            pairs = ", ".join(
                f"{quote_literal(k)} = {quote_literal(v)}" for k, v in self.properties.items()
            )
            sql += f" TBLPROPERTIES ({pairs})"
        return sql

    def difference(self, detail: Mapping[str, Any]) -> str | None:
        """How a table's ``DESCRIBE DETAIL`` row differs from this layout (``None``:
        it matches); only what is declared counts."""
        found: list[str] = []
        clustering = tuple(detail.get("clusteringColumns") or ())
        if self.cluster_by and clustering != self.cluster_by:
            found.append(
                f"clustered by {list(clustering) or 'nothing'}, declared {list(self.cluster_by)}"
            )
        properties: Mapping[str, str] = detail.get("properties") or {}
        for name, value in self.properties.items():
            if properties.get(name) != value:
                have = properties.get(name)
                shown = "unset" if have is None else repr(have)
                found.append(f"property {name} is {shown}, declared {value!r}")
        return "; ".join(found) or None
