"""Run ONE task: ``dbxdec-run``, IoManagers, per-slice checks, task values, local runner.

One subpackage (room) per responsibility; :data:`ROOMS` lists them lowest first, and a
room imports only itself, the rooms before it and the layers above ``runtime``
(``tests/test_layers.py``). The flat modules are the paths written outside the package:
:mod:`.entrypoint`, :mod:`.monitor_entry`, :mod:`.notebook_entry` and :mod:`.spark`.
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
