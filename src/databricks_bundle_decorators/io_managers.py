"""Public module: IoManagers users pass to ``@task(io_manager=...)``."""

from .definitions.contracts import InputContext, OutputContext
from .runtime.core.keys import get_written_keys
from .runtime.io import IoManager, SparkTableIoManager
from .runtime.job_tables.tables import local_table_path, read_table

__all__ = [
    "InputContext",
    "IoManager",
    "OutputContext",
    "SparkTableIoManager",
    "get_written_keys",
    "local_table_path",
    "read_table",
]
