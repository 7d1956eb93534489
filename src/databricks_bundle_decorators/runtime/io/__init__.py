"""IoManagers: how task outputs are stored and read back, filtered to the run's keys.

The contract (``base``), the Spark table IoManager that owns naming, key predicates,
window validation and checks of a write (``spark_table``), append-once writes
(``append_once``) and the window guard of a keyed write (``window_guard``). The table
formats it writes through live one room down, in :mod:`..storage`, and are re-exported
here (``databricks_bundle_decorators.runtime.io.DeltaFormat`` keeps working). May import
:mod:`..core`, :mod:`..session`, :mod:`..storage` and :mod:`..checks` (a write is measured
and checked) and the layers above ``runtime``.
"""

from ..storage.delta import DeltaFormat
from ..storage.formats import TableFormat, TableRef
from ..storage.parquet import LocalParquetFormat
from .base import IoManager
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
