"""Which tasks of a job set or read task values, as far as the definitions can tell.

Databricks documents ``dbutils.jobs.taskValues`` for Python notebooks only
(https://docs.databricks.com/aws/en/jobs/task-values), so these tasks run as notebook
tasks. A task uses task values when its function (or one nested in it, or one of its
module that it calls) names ``set_task_value``/``get_task_value`` in its compiled code,
another task reads its values (``task_value(task, key)`` or a
``{{tasks.<task>.values.<key>}}`` reference), or it is a ``for_each_task`` fed by one.
A helper in another module is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import CodeType, FunctionType
from typing import Any

from .graph import TaskGraph
from .refs import TaskValueRef

TASK_VALUE_FUNCTIONS = frozenset({"set_task_value", "get_task_value"})
"""Names whose use in a task's code marks it as a task-value task."""

_VALUE_REFERENCE = re.compile(r"\{\{\s*tasks\.(`[^`]+`|[A-Za-z0-9_]+)\.values\.")


def task_value_tasks(graph: TaskGraph) -> frozenset[str]:
    """The keys of the tasks of ``graph`` that set or read task values.

    Example:
        >>> from databricks_bundle_decorators import Registry, set_task_value, task
        >>> registry = Registry()
        >>> @registry.job
        ... def pipeline():
        ...     @task
        ...     def discover():
        ...         set_task_value("regions", ["north"])
        ...     @task
        ...     def report(): ...
        ...     discover()
        ...     report()
        >>> sorted(task_value_tasks(pipeline.graph))
        ['discover']
    """
    found: set[str] = set()
    for key in graph.topological_order():
        definition = graph[key].definition
        if names_task_value_functions(definition.fn):
            found.add(key)
        for_each = definition.for_each
        source = _value_source(for_each.inputs) if for_each is not None else None
        if source is not None:
            found.add(key)
            found.add(source)
    return frozenset(found)


def names_task_value_functions(fn: Any, _seen: set[int] | None = None) -> bool:
    """Whether the code of ``fn`` names a task-value function: in its own code, a function
    nested in it, or a function of its own module that it calls (followed the same way).
    """
    code = getattr(fn, "__code__", None)
    if not isinstance(code, CodeType):
        return False
    seen = _seen if _seen is not None else set()
    seen.add(id(fn))
    names = {name for c in _code_objects(code) for name in c.co_names}
    if TASK_VALUE_FUNCTIONS & names:
        return True
    scope = getattr(fn, "__globals__", {})
    module = getattr(fn, "__module__", None)
    for name in sorted(names):
        helper = scope.get(name)
        if (
            isinstance(helper, FunctionType)
            and helper.__module__ == module
            and id(helper) not in seen
            and names_task_value_functions(helper, seen)
        ):
            return True
    return False


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _code_objects(constant)


def _value_source(inputs: object) -> str | None:
    """The task whose value feeds a for-each ``inputs``, if it is a task value."""
    if isinstance(inputs, TaskValueRef):
        return inputs.task_key
    if isinstance(inputs, str):
        match = _VALUE_REFERENCE.search(inputs)
        if match is not None:
            return match.group(1).strip("`")
    return None
