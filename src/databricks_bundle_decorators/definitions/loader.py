"""Loading pipeline modules into a registry: each failure becomes a diagnostic, loading goes on."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

from ..errors import DbxdecError, UsageError
from .registry import Diagnostic, Registry, default_registry
from .sources import SourceLocation


class PipelineImportError(DbxdecError):
    """Pipeline modules failed to import; the message names each file, line and error
    (``diagnostics``: one per failed module, in import order)."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(str(d) for d in self.diagnostics))


def load_pipelines(
    modules: Iterable[str], *, root: Path | None = None, registry: Registry | None = None
) -> list[Diagnostic]:
    """Import every pipeline module (a package with all its submodules), recording each failure
    in ``registry`` (default: the default registry); ``root`` and ``root/src`` go on ``sys.path``.

    Returns:
        The diagnostics of the modules that failed, in import order.

    Raises:
        UsageError: a configured module does not exist.
    """
    target = registry if registry is not None else default_registry
    if root is not None:
        for path in (root / "src", root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))
    found: list[Diagnostic] = []
    for name in modules:
        for diagnostic in _import_tree(name):
            target.record(diagnostic)
            found.append(diagnostic)
    return found


def import_pipelines(
    modules: Iterable[str], *, root: Path | None = None, registry: Registry | None = None
) -> Registry:
    """Import pipeline modules (see :func:`load_pipelines`); return the registry.

    Raises:
        UsageError: a configured module does not exist.
        PipelineImportError: modules failed to import (each with file, line and error).
    """
    target = registry if registry is not None else default_registry
    failures = load_pipelines(modules, root=root, registry=target)
    if failures:
        raise PipelineImportError(failures)
    return target


def _import_tree(name: str) -> Iterator[Diagnostic]:
    """Import ``name`` and, for a package, its submodules; yield each failure."""
    try:
        module = import_module(name)
    except PipelineImportError as exc:
        yield from exc.diagnostics
        return
    path = getattr(module, "__path__", None)
    if path is None:
        return
    for info in sorted(pkgutil.iter_modules(path, prefix=f"{name}."), key=lambda i: i.name):
        yield from _import_tree(info.name)


def import_module(name: str, *, not_found: str | None = None) -> ModuleType:
    """Import one module, turning failures into one-line errors.

    Raises:
        UsageError: the module does not exist (``not_found`` is the message).
        PipelineImportError: it failed to import (file, line and the chained error).
    """
    try:
        return importlib.import_module(name)
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else None
        raise PipelineImportError(
            [Diagnostic(f"cannot import pipelines {name!r}: syntax error: {exc.msg}", where)]
        ) from exc
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise UsageError(
                not_found
                or f"pipeline module {name!r} not found (check [tool.dbxdec] pipelines or "
                "--pipelines)"
            ) from None
        raise PipelineImportError([_diagnostic(name, exc)]) from exc
    except DbxdecError as exc:
        located = getattr(exc, "location", None) is not None  # its message names the line
        where = None if located else _user_line(exc)
        raise PipelineImportError(
            [Diagnostic(f"cannot import pipelines {name!r}: {exc.render()}", where)]
        ) from None
    except Exception as exc:
        raise PipelineImportError([_diagnostic(name, exc)]) from exc


def _user_line(exc: BaseException) -> str | None:
    location = SourceLocation.raised_at(exc)
    return None if location is None else str(location)


def _diagnostic(name: str, exc: BaseException) -> Diagnostic:
    message = f"cannot import pipelines {name!r}: {type(exc).__name__}: {exc}"
    return Diagnostic(message, _user_line(exc))
