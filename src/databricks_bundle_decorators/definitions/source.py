"""Where a definition was written, for error messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
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
        target = inspect.unwrap(fn)
        try:
            file = inspect.getsourcefile(target) or inspect.getfile(target)
        except TypeError:
            file = "<unknown>"
        code = getattr(target, "__code__", None)
        return cls(file, code.co_firstlineno if code is not None else 0)
