"""Tracing a job body: task calls become nodes and edges of a :class:`TaskGraph`."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import DefinitionError
from .graph import InputEdge, TaskGraph, TaskNode
from .refs import AllPartitions, TaskProxy

if TYPE_CHECKING:
    from .task import TaskDefinition

FOR_EACH_INPUT_PARAM = "inputs"


class JobTrace:
    """Collects the task calls of one job body while it runs."""

    def __init__(self, job_name: str) -> None:
        self.job_name = job_name
        self._nodes: dict[str, TaskNode] = {}
        self._called: dict[int, str] = {}

    def record_call(
        self, definition: TaskDefinition, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> TaskProxy:
        """Record one call of ``definition`` and return the reference to its output."""
        key = definition.key
        where = str(definition.source)
        if id(definition) in self._called:
            raise DefinitionError(
                "is called twice in the job body; each task runs once per job "
                "(define a second task with another name)",
                job=self.job_name,
                task=key,
                location=where,
            )
        if key in self._nodes:
            other = self._nodes[key].definition.source
            raise DefinitionError(
                f"duplicate task key: another task with this key is defined at {other}",
                job=self.job_name,
                task=key,
                location=where,
            )
        inputs = tuple(self._input_edges(definition, args, kwargs))
        control = tuple(
            _dependency_key(dep, self.job_name, key, where) for dep in definition.depends_on
        )
        self._called[id(definition)] = key
        self._nodes[key] = TaskNode(definition, inputs, control)
        return TaskProxy(key, self.job_name)

    def graph(self) -> TaskGraph:
        """The traced graph; checks references and cycles."""
        return TaskGraph(self.job_name, dict(self._nodes))

    def _input_edges(
        self, definition: TaskDefinition, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> Iterator[InputEdge]:
        signature = inspect.signature(definition.fn)
        if definition.for_each is not None:
            signature = signature.replace(
                parameters=[
                    p for p in signature.parameters.values() if p.name != FOR_EACH_INPUT_PARAM
                ]
            )
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise DefinitionError(
                f"call does not match {definition.fn.__name__}{signature}: {exc}",
                job=self.job_name,
                task=definition.key,
                location=str(definition.source),
            ) from None
        for name, value in bound.arguments.items():
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                raise DefinitionError(
                    f"*{name} cannot receive task outputs; name each input parameter",
                    job=self.job_name,
                    task=definition.key,
                    location=str(definition.source),
                )
            items = value.items() if kind is inspect.Parameter.VAR_KEYWORD else [(name, value)]
            for param, arg in items:
                yield self._edge(definition, param, arg)

    def _edge(self, definition: TaskDefinition, param: str, arg: object) -> InputEdge:
        flag = isinstance(arg, AllPartitions)
        proxy = arg.proxy if isinstance(arg, AllPartitions) else arg
        if not isinstance(proxy, TaskProxy):
            raise DefinitionError(
                f"argument {param!r} is a {type(arg).__name__}, not the output of a task call; "
                "task arguments must be task outputs (pass constants as job params)",
                job=self.job_name,
                task=definition.key,
                location=str(definition.source),
            )
        if proxy.job_name != self.job_name:
            raise DefinitionError(
                f"argument {param!r} is the output of task {proxy.task_key!r} of another job "
                f"({proxy.job_name!r})",
                job=self.job_name,
                task=definition.key,
                location=str(definition.source),
            )
        return InputEdge(param, proxy.task_key, flag)


def _dependency_key(dep: object, job_name: str, task_key: str, where: str) -> str:
    from .task import TaskDefinition

    if isinstance(dep, TaskProxy):
        return dep.task_key
    if isinstance(dep, TaskDefinition):
        return dep.key
    if isinstance(dep, str):
        return dep
    raise DefinitionError(
        f"depends_on entries must be tasks, task outputs or task keys, got {type(dep).__name__}",
        job=job_name,
        task=task_key,
        location=where,
    )


_TRACE: ContextVar[JobTrace | None] = ContextVar("dbxdec_job_trace", default=None)


@contextmanager
def tracing(job_name: str) -> Iterator[JobTrace]:
    """Trace a job body: task calls inside the block are recorded, not executed."""
    trace = JobTrace(job_name)
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def current_trace() -> JobTrace | None:
    """The job being traced, or ``None`` outside a job body."""
    return _TRACE.get()
