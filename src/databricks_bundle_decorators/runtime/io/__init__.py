"""IoManagers: how task outputs are stored and read back, filtered to the run's keys."""

from .base import IoManager
from .delta import DeltaFormat
from .formats import TableFormat, TableRef
from .parquet import LocalParquetFormat
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
