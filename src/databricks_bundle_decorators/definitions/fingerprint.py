"""A task's code fingerprint: what ``dbxdec stale`` compares to tell which keys were
computed by other code.

It hashes the task function's source and the project code it reaches: the functions and
classes of the project it names (followed the same way, so a helper's change counts), and
the project modules it names (their whole source). "The project" is the top-level package
of the task's module and the top-level modules beside it from the same distribution (the
project's wheel) or, in a checkout, from none (:func:`is_project_module`), so the
fingerprint is the same in a checkout and in the installed wheel (the same files, found by
module name, not by path); dbxdec's own code, the standard library and other installed
distributions are not part of it. Sources are compared as text with blank lines,
whole-line comments and trailing spaces left out (an edit of those changes nothing), and
independent of the Python version (no AST or token stream, whose shapes change between
versions). A function whose source cannot be read (defined in a REPL) hashes its bytecode
name only, and says so in its fingerprint's first character (``"~"``).

Example:
    >>> def f(x):
    ...     return x + 1
    >>> len(task_fingerprint(f))
    16
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import inspect
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import CodeType, FunctionType, ModuleType
from typing import Any

_OWN = __name__.split(".")[0]
_CACHE: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def task_fingerprint(fn: Callable[..., Any]) -> str:
    """16 hex characters of SHA-256 over the normalised sources ``fn`` reaches."""
    target = inspect.unwrap(fn)
    try:
        known = _CACHE.get(target)
    except TypeError:  # not weakly referable: computed each time
        known = None
    if known is not None:
        return known
    root = (getattr(target, "__module__", None) or "").split(".")[0]
    digest = hashlib.sha256()
    exact = True
    for name, text in _reached(target, root):
        if text is None:
            exact = False
            text = ""
        digest.update(f"{name}\n{text}\n\0".encode())
    fingerprint = ("" if exact else "~") + digest.hexdigest()[: 16 if exact else 15]
    with contextlib.suppress(TypeError):
        _CACHE[target] = fingerprint
    return fingerprint


def clear_cache() -> None:
    """Forget computed fingerprints (after the project's modules were reloaded)."""
    _CACHE.clear()


def normalised(text: str) -> str:
    """Source text as compared: dedented, without blank lines, whole-line comments or
    trailing spaces.

    Example:
        >>> normalised("  x = 1  # kept\\n\\n  # dropped\\n  y = 2\\n")
        'x = 1  # kept\\ny = 2'
    """
    lines = textwrap.dedent(text.replace("\r\n", "\n")).split("\n")
    kept = [line.rstrip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return "\n".join(kept)


def _reached(start: Any, root: str) -> Iterator[tuple[str, str | None]]:
    """``(qualified name, normalised source)`` of ``start`` and the project code it names,
    each once, in a stable order (depth first, names in order of first use)."""
    seen: set[str] = set()
    stack: list[Any] = [start]
    while stack:
        item = stack.pop()
        name = _qualified(item)
        if name in seen:
            continue
        seen.add(name)
        yield name, _source(item)
        named = [v for v in _named(item) if _in_project(v, root)]
        stack.extend(reversed(named))


def _qualified(item: Any) -> str:
    if isinstance(item, ModuleType):
        return item.__name__
    return f"{getattr(item, '__module__', '?')}.{getattr(item, '__qualname__', repr(item))}"


def _source(item: Any) -> str | None:
    try:
        return normalised(inspect.getsource(item))
    except (OSError, TypeError):
        return None


def _named(item: Any) -> list[Any]:
    """The objects ``item`` names: a function's globals (and closure cells) its code uses,
    a class's methods' names, a module's project imports."""
    if isinstance(item, ModuleType):
        return [v for v in vars(item).values() if isinstance(v, ModuleType | type | FunctionType)]
    if isinstance(item, type):
        found: list[Any] = []
        for member in vars(item).values():
            function = getattr(member, "__func__", member)
            if isinstance(function, FunctionType):
                found.extend(_named(function))
        return found
    function = getattr(item, "__func__", item)
    code = getattr(function, "__code__", None)
    if not isinstance(code, CodeType):
        return []
    scope = getattr(function, "__globals__", {})
    values: list[Any] = []
    for name in _names(code):
        if name in scope:
            value = scope[name]
            wrapped = getattr(value, "fn", None)  # a @task or @job: its function
            values.append(wrapped if isinstance(wrapped, FunctionType) else value)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return values


def _names(code: CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):  # nested functions, comprehensions, lambdas
            names.extend(_names(const))
    return list(dict.fromkeys(names))


def _in_project(value: Any, root: str) -> bool:
    """Whether ``value`` is a function, class or module of the project whose task module's
    top-level package is ``root`` (see :func:`is_project_module`)."""
    if isinstance(value, ModuleType):
        module = value.__name__
    elif isinstance(value, type | FunctionType):
        module = getattr(value, "__module__", None) or ""
        if module not in sys.modules:
            return False
    else:
        return False
    return is_project_module(module, root)


def is_project_module(module: str, root: str) -> bool:
    """Whether ``module`` is the project's code: in the task module's top-level package
    ``root``, or a top-level module beside it that comes from the same distribution (the
    project's wheel) or, in a checkout, from none (not the standard library, not another
    installed distribution). Never dbxdec's own.

    Example:
        >>> is_project_module("json", "my_pipelines"), is_project_module("click", "x")
        (False, False)
        >>> is_project_module("my_pipelines.jobs", "my_pipelines")
        True
    """
    top = module.split(".")[0]
    if not root or root == _OWN or top == _OWN:
        return False
    if top == root:
        return True
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return False
    owners = _distributions()
    theirs = set(owners.get(top, ()))
    ours = set(owners.get(root, ()))
    return bool(theirs & ours) if ours else not theirs


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module names -> the installed distributions that provide them (read once)."""
    return importlib.metadata.packages_distributions()
