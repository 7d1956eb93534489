"""Run ONE task: ``dbxdec-run``, IoManagers, per-slice checks, task values, local runner.

One subpackage (room) per responsibility; :data:`ROOMS` lists them lowest first, and a
room imports only itself, the rooms before it and the layers above ``runtime``
(``tests/test_layers.py``). The flat modules are the paths written outside the package:
:mod:`.entrypoint`, :mod:`.monitor_entry`, :mod:`.notebook_entry` and :mod:`.spark`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backfill.scope import KeyScope
    from ..definitions.contracts import InputContext, OutputContext, RunEnvironment
    from .checks.shipped import Check, Expect, FrameCheck, MaxNullFraction, MinRowCount, Unique
    from .core.errors import CheckFailed, InputMissing, OutputRejected, TaskRunError
    from .core.keys import get_written_keys
    from .core.task_values import DbutilsTaskValueStore, LocalTaskValueStore
    from .io import IoManager, SparkTableIoManager, TableName
    from .running.dispatch import TaskRunRequest, job_parameters, run_keys, run_task
    from .running.local import (
        JobRunResult,
        TaskEvent,
        TaskResult,
        run_job_locally,
        slice_parameters,
    )

# Where each exported name lives, imported on first use: importing one room (the package
# root needs only core.key_columns; code generation none) must not load Spark I/O, the
# local runner and every check (a sixth of a process's start-up).
_EXPORTS = {
    "KeyScope": "..backfill.scope",
    **dict.fromkeys(["InputContext", "OutputContext", "RunEnvironment"], "..definitions.contracts"),
    **dict.fromkeys(
        ["Check", "Expect", "FrameCheck", "MaxNullFraction", "MinRowCount", "Unique"],
        ".checks.shipped",
    ),
    **dict.fromkeys(
        ["CheckFailed", "InputMissing", "OutputRejected", "TaskRunError"], ".core.errors"
    ),
    "get_written_keys": ".core.keys",
    **dict.fromkeys(["DbutilsTaskValueStore", "LocalTaskValueStore"], ".core.task_values"),
    **dict.fromkeys(["IoManager", "SparkTableIoManager", "TableName"], ".io"),
    **dict.fromkeys(
        ["TaskRunRequest", "job_parameters", "run_keys", "run_task"], ".running.dispatch"
    ),
    **dict.fromkeys(
        ["JobRunResult", "TaskEvent", "TaskResult", "run_job_locally", "slice_parameters"],
        ".running.local",
    ),
}


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
