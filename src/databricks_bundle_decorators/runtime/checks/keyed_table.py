"""What the checks that read a table's committed keys (:mod:`.baselines`) and the
quarantine (:mod:`.quarantine`) need of the output's IoManager
(:class:`~..io.spark_table.SparkTableIoManager`).

Declared apart from that IoManager (which calls those modules), so that they need
nothing of it; the table types are imported for type checking only, because importing
``runtime.io`` loads the IoManager, which imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ...backfill.scope import KeyScope
    from ...definitions.contracts import OutputContext, RunEnvironment
    from ..storage.formats import TableFormat, TableRef
    from ..storage.table_name import TableName


class KeyedTable(Protocol):
    """A Spark table partitioned by backfill key, as its IoManager describes it."""

    @property
    def table(self) -> TableName:
        """The table's name."""
        ...

    @property
    def partition_column(self) -> str | None:
        """The column holding the key (``None``: a snapshot table)."""
        ...

    @property
    def static_column(self) -> str | None:
        """The static dimension's column of a two-dimensional table."""
        ...

    def table_format(self, environment: RunEnvironment) -> TableFormat:
        """The format this environment uses."""
        ...

    def table_ref(self, environment: RunEnvironment) -> TableRef:
        """Where the table is."""
        ...

    def replace_predicate(self, scope: KeyScope) -> str | None:
        """The ``replaceWhere`` of a write of ``scope``."""
        ...

    def transaction(self, context: OutputContext) -> tuple[str, int] | None:
        """The commit's idempotence id."""
        ...

    def metadata(self, context: OutputContext) -> str | None:
        """The commit's ``userMetadata``."""
        ...


def slice_static_column(table: KeyedTable, scope: KeyScope) -> str | None:
    """The static column when ``scope``'s keys are ``STATIC:TIME`` for this table."""
    from ..storage.dimensions import is_two_dimensional

    two = is_two_dimensional(str(table.table), table.static_column, scope)
    return table.static_column if two else None
