"""Run kinds: ``run_task`` decodes one kind from the wire parameters and hands the request
to that kind's program.

Spark-free: the job's task has no IoManager, and the session's factory fails if anything
asks for Spark, so each kind's hand-over is seen without a JVM.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import DailyBackfill, Registry, task
from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_KEY_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
    KeyRange,
    MeasureOrder,
    PresenceOrder,
    StageOrder,
    SwapOrder,
    TaskOrder,
    UndoOrder,
    encode_order,
)
from databricks_bundle_decorators.definitions.contracts import LazySession, RunEnvironment
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.runtime.core.context import current_environment
from databricks_bundle_decorators.runtime.core.task_values import LocalTaskValueStore
from databricks_bundle_decorators.runtime.programs.run_kinds import (
    RUN_KIND_NAMES,
    RunKind,
    decode_run_kind,
)
from databricks_bundle_decorators.runtime.running.dispatch import (
    PROGRAMS,
    TaskRunRequest,
    job_parameters,
    run_keys,
    run_task,
    task_request,
)

BACKFILL_ID = "kinds-20240101T000000-abcd"
RANGE = KeyRange("2024-01-01", "2024-01-02")
ORDERS = {
    "undo": {ORDER_PARAM: encode_order(UndoOrder(BACKFILL_ID))},
    "presence": {ORDER_PARAM: encode_order(PresenceOrder(RANGE))},
    "swap": {ORDER_PARAM: encode_order(SwapOrder(BACKFILL_ID))},
    "measure": {ORDER_PARAM: encode_order(MeasureOrder("5503", BACKFILL_ID, RANGE))},
}
SRC = Path(__file__).resolve().parents[2] / "src" / "databricks_bundle_decorators"

registry = Registry()
calls: list[tuple[str, str]] = []


@registry.job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-01-31"))
def kinds() -> None:
    @task
    def note() -> None:
        environment = current_environment()
        assert environment is not None
        calls.append((environment.staging, environment.backfill_id))

    note()


def _no_spark() -> Any:
    raise AssertionError("this run must not start Spark")


def _run(tmp_path: Path, **given: str) -> None:
    job = registry.get("kinds")
    params = job_parameters(job, {BACKFILL_RUN_TIME_PARAM: "2024-02-01T00:00:00Z", **given})
    request = TaskRunRequest(job, "note", params, run_keys(job, params))
    environment = RunEnvironment(LazySession(_no_spark), tmp_path / "warehouse", False, "r1")
    store = LocalTaskValueStore(tmp_path / "values")
    run_task(request, environment=environment, task_values=store)


@pytest.mark.parametrize(
    ("params", "name", "keyed"),
    [
        ({}, "task", True),
        ({ORDER_PARAM: encode_order(StageOrder(BACKFILL_ID))}, "stage", True),
        (ORDERS["swap"], "swap", False),
        (ORDERS["undo"], "undo", False),
        (ORDERS["presence"], "presence", False),
        (ORDERS["measure"], "measure", False),
    ],
    ids=["task", "stage", "swap", "undo", "presence", "measure"],
)
def test_each_kind_is_decoded_from_its_parameter(
    params: dict[str, str], name: str, keyed: bool
) -> None:
    kind = decode_run_kind(registry.get("kinds"), params)
    assert (kind.name, kind.processes_keys) == (name, keyed)


@given(st.sampled_from(sorted(ORDERS)))
def test_each_order_is_one_kind(name: str) -> None:
    assert decode_run_kind(registry.get("kinds"), ORDERS[name]).name == name


def test_a_malformed_order_names_its_parameter() -> None:
    with pytest.raises(UsageError, match=ORDER_PARAM):
        decode_run_kind(registry.get("kinds"), {ORDER_PARAM: "nonsense"})


def test_every_kind_has_a_program() -> None:
    assert sorted(PROGRAMS) == sorted(RUN_KIND_NAMES)


def test_a_program_handed_another_kinds_order_refuses_it() -> None:
    with pytest.raises(TypeError, match="a presence run has no UndoOrder"):
        RunKind("presence", PresenceOrder(KeyRange("2024-01-01", "2024-01-01"))).order_as(UndoOrder)


def test_task_and_stage_runs_call_the_task(tmp_path: Path) -> None:
    calls.clear()
    ordinary = encode_order(TaskOrder(BACKFILL_ID))
    _run(tmp_path, **{BACKFILL_KEY_PARAM: "2024-01-02", ORDER_PARAM: ordinary})
    stage = encode_order(StageOrder(BACKFILL_ID))
    _run(tmp_path, **{BACKFILL_KEY_PARAM: "2024-01-03", ORDER_PARAM: stage})
    assert calls == [("", BACKFILL_ID), (BACKFILL_ID, BACKFILL_ID)]


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("undo", f"undo of backfill {BACKFILL_ID}: task 'note' writes no table"),
        ("presence", "presence 2024-01-01..2024-01-02: task 'note' writes no table"),
        ("swap", f"full refresh {BACKFILL_ID}: task 'note' swaps no table"),
        (
            "measure",
            "measure of run 5503 2024-01-01..2024-01-02: task 'note' writes no partitioned "
            "Delta table",
        ),
    ],
    ids=["undo", "presence", "swap", "measure"],
)
def test_keyless_kinds_run_their_program_not_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, line: str
) -> None:
    calls.clear()
    _run(tmp_path, **ORDERS[kind])
    assert calls == []
    assert line in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    ("given", "source", "keys"),
    [
        ({}, "scheduled", ("2024-01-10",)),
        ({BACKFILL_KEY_PARAM: "2024-01-05"}, "explicit", ("2024-01-05",)),
        (ORDERS["undo"], "keyless", None),
    ],
    ids=["scheduled", "explicit", "keyless"],
)
def test_the_key_source_is_chosen_where_the_request_is_built(
    tmp_path: Path, given: dict[str, str], source: str, keys: tuple[str, ...] | None
) -> None:
    environment = RunEnvironment(LazySession(_no_spark), tmp_path / "warehouse", False, "r1")
    params = {BACKFILL_RUN_TIME_PARAM: "2024-01-10T06:00:00Z", **given}
    request = task_request(registry.get("kinds"), "note", params, environment)
    assert request.source is not None and request.source.name == source
    assert (request.keys.written if request.keys is not None else None) == keys


KIND_MODULES = {"task_run", "undo", "presence", "full_refresh", "measure"}


RUNTIME = SRC / "runtime"


def _runtime_path(module: str) -> Path | None:
    """The file of runtime module ``module`` (a module's last name), in whichever room
    of ``runtime/`` it lives; None when there is none."""
    return next(RUNTIME.rglob(f"{module}.py"), None)


def _runtime_imports(module: str) -> set[str]:
    """The runtime modules (last names) that runtime module ``module`` imports, relative
    imports resolved against its room (the runtime imports itself relatively), wherever
    the import stands."""
    path = _runtime_path(module)
    assert path is not None, module
    package = list(path.relative_to(SRC).parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            if target[:1] == ["runtime"]:
                found.add(target[-1])
                found.update(alias.name for alias in node.names)
    return found


def _reached(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in _runtime_imports(todo.pop()):
            if target not in seen and _runtime_path(target) is not None:
                seen.add(target)
                todo.append(target)
    return seen


@pytest.mark.parametrize("module", sorted(KIND_MODULES))
def test_no_kind_module_reaches_another(module: str) -> None:
    assert _reached(module) & KIND_MODULES <= {module}


def test_kind_module_check_sees_an_import() -> None:
    """The checker itself must be able to fail: dispatch reaches every kind's module."""
    assert _reached("dispatch") >= KIND_MODULES
