"""Values of generated job settings: descriptions from docstrings, plain copies."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

_SCALARS = frozenset({str, int, float, bool, type(None)})


def first_paragraph(fn: Any, limit: int) -> str | None:
    """The first paragraph of ``fn``'s docstring on one line, cut to ``limit`` characters
    (``None`` without a docstring): a job's or task's description."""
    local = inspect.isfunction(fn) and _no_enclosing_class(fn.__qualname__)
    if getattr(fn, "__doc__", "") is None and local:
        return None  # what inspect.getdoc finds, without its search of enclosing classes
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 3] + "..."


@lru_cache(maxsize=4096)  # the tasks of one factory share their qualified name
def _no_enclosing_class(qualname: str) -> bool:
    outer = qualname.rpartition(".")[0]
    return not outer or "<locals>" in outer.split(".")


def plain_copy(value: Any) -> Any:
    """A copy made of dicts, lists and scalars only (mapping proxies, tuples unwrapped)."""
    if type(value) in _SCALARS:  # most settings; spares the Mapping ABC check
        return value
    if isinstance(value, Mapping):
        return {str(key): plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_copy(item) for item in value]
    return value
