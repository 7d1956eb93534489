"""The shortcuts taken for speed give what the general code gives: the hand-made binding
of a task call (vs ``inspect``), the call-order topological order (vs the search), the
docstring shortcut (vs ``inspect.getdoc``) and the cached source locations."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators import DefinitionError, Registry, task
from databricks_bundle_decorators.bundle.codegen import first_paragraph
from databricks_bundle_decorators.definitions.sources import SourceLocation
from databricks_bundle_decorators.definitions.tracing import _bind_plain

from .stores import STORED


def _function(positional_only: int, positional: int, defaults: int, keyword_only: int) -> Any:
    """A function with the given parameter shape (parameters p0, p1, ... in order)."""
    names = [f"p{index}" for index in range(positional_only + positional + keyword_only)]
    before = names[:positional_only]
    middle = names[positional_only : positional_only + positional]
    after = names[positional_only + positional :]
    parts: list[str] = []
    first_default = positional_only + positional - defaults
    for index, name in enumerate(before + middle):
        parts.append(f"{name}=None" if index >= first_default else name)
        if index == positional_only - 1:
            parts.append("/")
    if after:
        parts.append("*")
        parts.extend(f"{name}=None" if index % 2 else name for index, name in enumerate(after))
    namespace: dict[str, Any] = {}
    exec(f"def f({', '.join(parts)}): pass", namespace)  # parameter shapes for the test only
    return namespace["f"]


def _inspected(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return list(inspect.signature(fn).bind(*args, **kwargs).arguments.items())
    except TypeError:
        return None


@settings(max_examples=300, deadline=None)
@given(
    shape=st.tuples(
        st.integers(0, 2), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)
    ).filter(lambda s: s[2] <= s[0] + s[1]),
    positional=st.integers(0, 6),
    keywords=st.lists(st.sampled_from([f"p{i}" for i in range(8)] + ["x"]), unique=True),
)
def test_hand_made_binding_matches_inspect(
    shape: tuple[int, int, int, int], positional: int, keywords: list[str]
) -> None:
    fn = _function(*shape)
    args = tuple(range(positional))
    kwargs = {name: name for name in keywords}
    bound = _bind_plain(fn, args, kwargs)
    expected = _inspected(fn, args, kwargs)
    if bound is None:  # left to inspect: only calls that do not bind
        assert expected is None
    else:
        assert bound == expected


def test_other_callables_are_left_to_inspect() -> None:
    def plain(a: int, *rest: int) -> None: ...

    def wrapped(a: int) -> None: ...

    wrapped.__wrapped__ = plain  # type: ignore[attr-defined]
    assert _bind_plain(plain, (1,), {}) is None  # *args
    assert _bind_plain(wrapped, (1,), {}) is None  # inspect follows __wrapped__
    assert _bind_plain(len, (1,), {}) is None


def test_later_dependency_by_key_still_orders_and_detects_cycles() -> None:
    registry = Registry()

    @registry.job
    def ordered() -> None:
        @task(depends_on=["load"])
        def report() -> None: ...

        @task(io_manager=STORED)
        def load() -> None: ...

        report()
        load()

    assert ordered.graph.topological_order() == ["load", "report"]

    @registry.job
    def looped() -> None:
        @task(depends_on=["second"])
        def first() -> None: ...

        @task(depends_on=["first"])
        def second() -> None: ...

        first()
        second()

    with pytest.raises(DefinitionError, match="dependency cycle"):
        _ = looped.graph


class _Base:
    def step(self) -> None:
        """Inherited docstring."""


class _Child(_Base):
    def step(self) -> None:
        pass


def _module_level() -> None:
    pass


def test_docstring_shortcut_matches_getdoc() -> None:
    def local() -> None:
        pass

    for fn in (local, _module_level, _Child.step, _Base.step):
        doc = inspect.getdoc(fn)
        expected = " ".join(doc.split()) if doc else None
        assert first_paragraph(fn, 1000) == expected


def test_source_location_of_shared_code_is_the_same() -> None:
    def factory() -> Any:
        def step() -> None: ...

        return step

    first, second = SourceLocation.of(factory()), SourceLocation.of(factory())
    assert first == second
    assert first.file == __file__
    assert first.line == factory.__code__.co_firstlineno + 1
