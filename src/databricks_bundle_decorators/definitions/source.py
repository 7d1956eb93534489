"""Where a definition was written, for error messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType
from typing import Any


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A file and line of user code."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> SourceLocation:
        """The location where ``fn`` is defined."""
        # A plain function wraps nothing: no need for inspect.unwrap's attribute probes.
        plain = type(fn) is FunctionType and "__wrapped__" not in fn.__dict__
        target = fn if plain else inspect.unwrap(fn)
        code = getattr(target, "__code__", None)
        if code is not None:
            known = _KNOWN.get((code.co_filename, code.co_firstlineno))
            if known is not None and type(known) is cls:
                return known
        try:
            file = inspect.getsourcefile(target) or inspect.getfile(target)
        except TypeError:
            file = "<unknown>"
        location = cls(file, code.co_firstlineno if code is not None else 0)
        if code is not None and file == code.co_filename:
            _KNOWN[(file, location.line)] = location
        return location


_KNOWN: dict[tuple[str, int], SourceLocation] = {}
"""Locations by file and line, cached: ``inspect.getsourcefile`` stats the file each call."""
