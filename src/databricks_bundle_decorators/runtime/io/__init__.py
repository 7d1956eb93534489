"""IoManagers: how task outputs are stored and read back, filtered to the run's keys.

The Spark table IoManager (``spark_table``: naming, key predicates, the window guard,
the checks and the write modes of a write); the table formats of :mod:`..storage` are
re-exported. May import :mod:`..core`, :mod:`..session`, :mod:`..storage` and
:mod:`..checks` and the layers above ``runtime``.
"""

from ...definitions.contracts import IoManager
from ..storage.delta import DeltaFormat
from ..storage.formats import TableFormat, TableRef
from ..storage.parquet import LocalParquetFormat
from .spark_table import SparkTableIoManager, TableName

__all__ = [
    "DeltaFormat",
    "IoManager",
    "LocalParquetFormat",
    "SparkTableIoManager",
    "TableFormat",
    "TableName",
    "TableRef",
]
