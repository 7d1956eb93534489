"""The contract matrix: every task type the generator emits x every run kind of the order
codec (:data:`ORDER_KINDS`) x the report that run kind's reader reads.

Each cell creates a job whose only task has that type on the emulator, runs it, hands the
task run's report over by that type's channel (a wheel task's stdout is its ``logs``; a
notebook task's reports are its ``dbutils.notebook.exit()`` value, ``notebook_output.result``:
databricks-sdk ``jobs.RunOutput.logs`` / ``jobs.NotebookOutput.result``), and asserts the
launcher's reader for that run kind received it. A for-each task's reports are written by its
iterations, each by the nested task's channel (``jobs.Run.iterations``): the cell runs two
iterations and hands the report to the second. A task type the generator starts emitting,
or an order kind the codec gains, fails :func:`test_the_matrix_covers_every_task_type_and_run_kind`
until it has a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators import (
    Registry,
    for_each_task,
    set_task_value,
    task,
    task_value,
)
from databricks_bundle_decorators.backfill.check_report import CheckReport, CheckResult
from databricks_bundle_decorators.backfill.wire import (
    ORDER_KINDS,
    KeyChange,
    MeasureReport,
    PresenceReport,
    exit_value,
    report_line,
)
from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.bundle.options import CodegenOptions
from databricks_bundle_decorators.launch.backends.measure_run import RemoteKeyChanges
from databricks_bundle_decorators.launch.backends.task_output import read_check_results
from databricks_bundle_decorators.launch.operations.presence import _read_reports
from databricks_bundle_decorators.launch.operations.undo import _undo_reports
from databricks_bundle_decorators.testing import JobsEmulator

OPTIONS = CodegenOptions(package_name="proj")

_WHEEL = {"python_wheel_task": {"package_name": "app", "entry_point": "dbxdec-run"}}
_NOTEBOOK = {"notebook_task": {"notebook_path": "./notebooks/j__t.py"}}


def _for_each(nested: dict[str, Any]) -> dict[str, Any]:
    return {
        "for_each_task": {"inputs": '["x", "y"]', "task": {"task_key": "t_iteration", **nested}}
    }


#: The settings of one task of each type, as the generator emits them (checked below).
TASK_TYPES: dict[str, dict[str, Any]] = {
    "python_wheel_task": _WHEEL,
    "notebook_task": _NOTEBOOK,
    "for_each_task/python_wheel_task": _for_each(_WHEEL),
    "for_each_task/notebook_task": _for_each(_NOTEBOOK),
}
#: Types the generator emits that no launcher reader covers yet: each cell is an xfail.
UNCOVERED: dict[str, str] = {}

RESULT = CheckResult("unique(id)", "2024-01-01", 0.0, "= 0", True, "t", "")


def _checks(run_id: int, task_run_id: int) -> tuple[str, Callable[[WorkspaceClient], Any], Any]:
    result = CheckResult("unique(id)", "2024-01-01", 0.0, "= 0", True, "t", f"{run_id}-0")
    line = CheckReport((result,), f"{run_id}-0", "t", str(task_run_id)).to_line()
    return line, lambda w: read_check_results(w, run_id), (result,)


def _presence(run_id: int, task_run_id: int) -> tuple[str, Callable[[WorkspaceClient], Any], Any]:
    report = PresenceReport("main.s.t", "t", True, {"2024-01-01": 3})
    return report.to_line(), lambda w: _read_reports(w, run_id), [report]


def _undo(run_id: int, task_run_id: int) -> tuple[str, Callable[[WorkspaceClient], Any], Any]:
    line = report_line("undo", {"table": "main.s.t", "version": 7})
    return line, lambda w: _undo_reports(w, run_id), [("main.s.t", 7)]


def _measure(run_id: int, task_run_id: int) -> tuple[str, Callable[[WorkspaceClient], Any], Any]:
    change = KeyChange("main.s.t", "2024-01-01", 1, 2, 3, 4, "rows")
    report = MeasureReport("main.s.t", "t", True, (change,))
    return report.to_line(), lambda w: RemoteKeyChanges(w, 0, _JOB)._reports(run_id), [report]


_registry = Registry()


@_registry.job(name="measured")
def _measured() -> None:
    @task
    def t() -> None: ...

    t()


_JOB = _registry.get("measured")


#: Per run kind of the order codec: the report its run writes and the launcher's reader.
#: task, stage and swap runs run the job's tasks: the backend reads their check results.
READERS: dict[str, Callable[[int, int], tuple[str, Callable[[WorkspaceClient], Any], Any]]] = {
    "task": _checks,
    "stage": _checks,
    "swap": _checks,
    "undo": _undo,
    "presence": _presence,
    "measure": _measure,
}


def _emitted_types() -> set[str]:
    """Every task type the generator emits for a job using all it can generate."""
    registry = Registry()

    @registry.job(name="j")
    def j() -> None:
        @task(name="a")
        def setter() -> None:
            set_task_value("k", ["x"])

        @task
        def plain() -> None: ...

        @for_each_task(inputs=["x", "y"])
        def each(inputs: str) -> None: ...

        @for_each_task(inputs=task_value("a", "k"))
        def each_setter(inputs: str) -> None:
            set_task_value("n", 1)

        setter()
        plain()
        each()
        each_setter()

    found = set()
    for settings in job_resource(registry.get("j"), options=OPTIONS)["tasks"]:
        loop = settings.get("for_each_task")
        inner = loop["task"] if loop else settings
        kind = next(k for k in ("python_wheel_task", "notebook_task") if k in inner)
        found.add(f"for_each_task/{kind}" if loop else kind)
    return found


def test_the_matrix_covers_every_task_type_and_run_kind() -> None:
    assert _emitted_types() == set(TASK_TYPES) | set(UNCOVERED)
    assert set(READERS) == set(ORDER_KINDS)


CELLS = [pytest.param(t, k, id=f"{t}-{k}") for t in TASK_TYPES for k in ORDER_KINDS] + [
    pytest.param(t, k, id=f"{t}-{k}", marks=pytest.mark.xfail(run=False, reason=why))
    for t, why in UNCOVERED.items()
    for k in ORDER_KINDS
]


@pytest.mark.parametrize(("task_type", "run_kind"), CELLS)
def test_the_launcher_receives_the_report(emu: JobsEmulator, task_type: str, run_kind: str) -> None:
    settings = {"tasks": [{"task_key": "t", **TASK_TYPES[task_type]}]}
    job_id = emu.create_job("j", settings=settings)
    w = emu.workspace_client()
    run_id = int(w.jobs.run_now(job_id).run_id)
    emu.wait_until_idle()
    [run] = emu.runs(job_id)
    [task_run_id] = run.task_run_ids
    if task_type.startswith("for_each_task/"):  # the second iteration writes the report
        task_run_id = run.iterations[task_run_id][1]
    line, read, expected = READERS[run_kind](run_id, task_run_id)
    if task_type.endswith("notebook_task"):
        emu.set_notebook_result(task_run_id, exit_value([line]))
    else:
        emu.set_task_logs(task_run_id, f"some output\n{line}\n")
    assert read(w) == expected
