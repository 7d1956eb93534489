"""Run ONE task: ``dbxdec-run``, IoManagers, per-slice checks, task values, local runner.

``runtime/`` is split into rooms, one subpackage per responsibility. :data:`ROOMS` lists
them lowest first: a module of a room imports only from its own room, from rooms before
it in the list, and from the layers above ``runtime`` (``tests/test_layers.py`` checks
it, ``TYPE_CHECKING`` and function-level imports included). Only the modules whose
dotted paths are written outside the package stay flat: :mod:`.entrypoint`
(``dbxdec-run``), :mod:`.monitor_entry` (``dbxdec-monitor``), :mod:`.notebook_entry` (a
generated notebook task) and :mod:`.spark` (``local_spark_session``, imported by the
tests ``dbxdec init`` writes); they may import every room, and no room imports them.

- :mod:`.core` -- errors, key scopes, IoManager contexts, SQL predicates, task values;
- :mod:`.session` -- the Spark session: embedded, Spark Connect, serverless rules;
- :mod:`.storage` -- table formats and Delta operations, below any IoManager;
- :mod:`.checks` -- per-slice checks: measuring, judging, baselines, quarantine, results;
- :mod:`.io` -- IoManagers: the contract and the Spark table IoManager;
- :mod:`.job_tables` -- a job's tables: catalog names, outputs, sources, rows per key;
- :mod:`.programs` -- the run kinds and their programs: task run, presence, undo, refresh;
- :mod:`.triggers` -- table-triggered and catching-up runs;
- :mod:`.running` -- one task through one code path, the local DAG runner, the monitor.
"""

from ..backfill.scope import KeyScope
from ..definitions.contracts import InputContext, OutputContext, RunEnvironment
from .checks.shipped import Check, Expect, FrameCheck, MaxNullFraction, MinRowCount, Unique
from .core.errors import CheckFailed, InputMissing, OutputRejected, TaskRunError
from .core.keys import get_written_keys
from .core.task_values import DbutilsTaskValueStore, LocalTaskValueStore
from .io import IoManager, SparkTableIoManager, TableName
from .running.dispatch import TaskRunRequest, job_parameters, run_keys, run_task
from .running.local import JobRunResult, TaskEvent, TaskResult, run_job_locally, slice_parameters

ROOMS = [
    "core",
    "session",
    "storage",
    "checks",
    "io",
    "job_tables",
    "programs",
    "triggers",
    "running",
]
"""The rooms of ``runtime/``, lowest first: a room imports only the rooms before it."""

__all__ = [
    "Check",
    "CheckFailed",
    "DbutilsTaskValueStore",
    "Expect",
    "FrameCheck",
    "InputContext",
    "InputMissing",
    "IoManager",
    "JobRunResult",
    "KeyScope",
    "LocalTaskValueStore",
    "MaxNullFraction",
    "MinRowCount",
    "OutputContext",
    "OutputRejected",
    "RunEnvironment",
    "SparkTableIoManager",
    "TableName",
    "TaskEvent",
    "TaskResult",
    "TaskRunError",
    "TaskRunRequest",
    "Unique",
    "get_written_keys",
    "job_parameters",
    "run_job_locally",
    "run_keys",
    "run_task",
    "slice_parameters",
]
