"""Catalog names that work on Databricks and locally: ``main.sales.events`` everywhere.

Open-source Spark keeps Delta tables only in ``spark_catalog``, so locally a three-part
name is a Delta folder ``<warehouse>/<catalog>/<schema>/<table>`` (default warehouse
``.dbxdec/warehouse``, or ``$DBXDEC_WAREHOUSE``). Task code that reads a table itself
calls :func:`read_table`, which resolves the name in both places.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.context import current_environment, on_databricks
from ..io.spark_table import TableName
from ..storage.delta import DELTA_LOG

WAREHOUSE_ENV = "DBXDEC_WAREHOUSE"
DEFAULT_WAREHOUSE = Path(".dbxdec") / "warehouse"


def local_warehouse() -> Path:
    """The running task's warehouse, else ``$DBXDEC_WAREHOUSE``, else ``.dbxdec/warehouse``."""
    environment = current_environment()
    if environment is not None and not environment.databricks:
        return environment.warehouse
    return Path(os.environ.get(WAREHOUSE_ENV) or DEFAULT_WAREHOUSE).resolve()


def local_table_path(name: str, warehouse: Path | None = None) -> Path:
    """The folder that holds table ``name`` locally.

    Example:
        >>> local_table_path("main.sales.events", Path("/w")).as_posix()
        '/w/main/sales/events'

    Raises:
        ValueError: ``name`` is not ``catalog.schema.table``.
    """
    return TableName.parse(name).local_path(warehouse or local_warehouse())


def local_table_exists(name: str, warehouse: Path | None = None) -> bool:
    """Whether the local Delta table ``name`` has been written."""
    return (local_table_path(name, warehouse) / DELTA_LOG).is_dir()


def read_table(name: str, *, spark: Any = None, warehouse: Path | None = None) -> Any:
    """Table ``name`` (``catalog.schema.table``) as a DataFrame, on Databricks and locally.

    On Databricks this is ``spark.table(name)``; locally the Delta folder of the name
    under the warehouse (see the module docs).

    Args:
        name: ``catalog.schema.table``.
        spark: The session (default: the running task's, else the active one).
        warehouse: Local warehouse (default: :func:`local_warehouse`).

    Raises:
        ValueError: ``name`` is not ``catalog.schema.table``, or, locally, the table
            has not been written.
    """
    table = TableName.parse(name)
    session = spark or _session()
    environment = current_environment()
    databricks = environment.databricks if environment is not None else on_databricks()
    if databricks:
        return session.read.table(table.quoted)
    path = table.local_path(warehouse or local_warehouse())
    if not (path / DELTA_LOG).is_dir():
        raise ValueError(
            f"table {name} does not exist locally (no Delta table at {path}); write it with a "
            "dbxdec job first, or declare it as a source with a local stand-in"
        )
    return session.read.format("delta").load(str(path))


def _session() -> Any:
    environment = current_environment()
    if environment is not None and environment.session is not None:
        return environment.spark
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from ..session.spark import databricks_spark_session, local_spark_session

    return databricks_spark_session() if on_databricks() else local_spark_session()
