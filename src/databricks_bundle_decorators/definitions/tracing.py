"""Tracing a job body: task calls become nodes and edges of a :class:`TaskGraph`."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import FunctionType
from typing import Any

from .graph import InputEdge, TaskGraph, TaskNode
from .refs import AllPartitions, TaskProxy
from .task import CURRENT_TRACE, FOR_EACH_INPUT_PARAM, TaskDefinition, task_key_of


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
        if id(definition) in self._called:
            raise definition.error(
                "is called twice in the job body; each task runs once per job "
                "(define a second task with another name)",
                self.job_name,
            )
        if key in self._nodes:
            other = self._nodes[key].definition.source
            raise definition.error(
                f"duplicate task key: another task with this key is defined at {other}",
                self.job_name,
            )
        bound = _bind_plain(definition.fn, args, kwargs) if definition.for_each is None else None
        if bound is None:
            inputs = tuple(self._input_edges(definition, args, kwargs))
        else:
            inputs = tuple([self._edge(definition, param, arg) for param, arg in bound])
        control: list[str] = []
        for dep in definition.depends_on:
            dep_key = task_key_of(dep)
            if dep_key is None:
                raise definition.error(
                    "depends_on entries must be tasks, task outputs or task keys, got "
                    f"{type(dep).__name__}",
                    self.job_name,
                )
            control.append(dep_key)
        self._called[id(definition)] = key
        self._nodes[key] = TaskNode(definition, inputs, tuple(control))
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
            raise definition.error(
                f"call does not match {definition.fn.__name__}{signature}: {exc}",
                self.job_name,
            ) from None
        for name, value in bound.arguments.items():
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                raise definition.error(
                    f"*{name} cannot receive task outputs; name each input parameter",
                    self.job_name,
                )
            items = value.items() if kind is inspect.Parameter.VAR_KEYWORD else [(name, value)]
            for param, arg in items:
                yield self._edge(definition, param, arg)

    def _edge(self, definition: TaskDefinition, param: str, arg: object) -> InputEdge:
        flag = isinstance(arg, AllPartitions)
        proxy = arg.proxy if isinstance(arg, AllPartitions) else arg
        if not isinstance(proxy, TaskProxy):
            raise definition.error(
                f"argument {param!r} is a {type(arg).__name__}, not the output of a task call; "
                "task arguments must be task outputs (pass constants as job params)",
                self.job_name,
            )
        if proxy.job_name != self.job_name:
            raise definition.error(
                f"argument {param!r} is the output of task {proxy.task_key!r} of another job "
                f"({proxy.job_name!r})",
                self.job_name,
            )
        return InputEdge(param, proxy.task_key, flag)


_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _bind_plain(
    fn: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[tuple[str, Any]] | None:
    """``inspect.signature(fn).bind(...).arguments`` items, read from the code object (faster);
    ``None`` leaves the call to ``inspect`` (not a plain function, or a call that does not bind).
    """
    if type(fn) is not FunctionType or fn.__dict__:  # __wrapped__, __signature__ live there
        return None
    code = fn.__code__
    if code.co_flags & _VARIADIC:
        return None
    names = code.co_varnames
    positional = code.co_argcount
    if len(args) > positional:
        return None
    if not args and not kwargs and not code.co_kwonlyargcount:  # a source task, most often
        return [] if positional <= len(fn.__defaults__ or ()) else None
    keyword_only = names[positional : positional + code.co_kwonlyargcount]
    bound = dict(zip(names, args, strict=False))  # the first len(args) parameters
    if kwargs:
        by_keyword = (*names[code.co_posonlyargcount : positional], *keyword_only)
        for name, value in kwargs.items():
            if name in bound or name not in by_keyword:
                return None
            bound[name] = value
    required = positional - len(fn.__defaults__ or ())
    if len(args) < required and any(name not in bound for name in names[:required]):
        return None
    if keyword_only:
        keyword_defaults = fn.__kwdefaults__ or {}
        if any(name not in bound and name not in keyword_defaults for name in keyword_only):
            return None
    if not kwargs:
        return list(bound.items())
    return [
        (name, bound[name]) for name in names[: positional + len(keyword_only)] if name in bound
    ]


@contextmanager
def tracing(job_name: str) -> Iterator[JobTrace]:
    """Trace a job body: task calls inside the block are recorded, not executed."""
    trace = JobTrace(job_name)
    token = CURRENT_TRACE.set(trace)
    try:
        yield trace
    finally:
        CURRENT_TRACE.reset(token)
