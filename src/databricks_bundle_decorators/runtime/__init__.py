"""Run ONE task: ``dbxdec-run``, IoManagers, per-slice checks, task values, local runner."""

from .checks import Check, Expect, FrameCheck, MaxNullFraction, MinRowCount, Unique
from .context import InputContext, OutputContext, RunEnvironment
from .dispatch import TaskRunRequest, job_parameters, run_keys, run_task
from .errors import CheckFailed, InputMissing, OutputRejected, TaskRunError
from .io import IoManager, SparkTableIoManager, TableName
from .keys import get_written_keys
from .local import JobRunResult, TaskEvent, TaskResult, run_job_locally, slice_parameters
from .scope import KeyScope
from .task_values import DbutilsTaskValueStore, LocalTaskValueStore

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
