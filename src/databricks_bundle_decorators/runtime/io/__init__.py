"""IoManagers: how task outputs are stored and read back, filtered to the run's keys:
the Spark table IoManager (``spark_table``: naming, key predicates, the window guard,
the checks and the write modes of a write). May import :mod:`..core`, :mod:`..session`,
:mod:`..storage` and :mod:`..checks` and the layers above ``runtime``.
"""

from ...definitions.contracts import IoManager
from .spark_table import SparkTableIoManager, TableName

__all__ = ["IoManager", "SparkTableIoManager", "TableName"]
