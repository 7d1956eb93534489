"""The user's project: ``[tool.dbxdec]`` settings and pipeline discovery."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..definitions import Registry, default_registry
from ..errors import DbxdecError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class PipelineImportError(DbxdecError):
    """A pipeline module failed to import; the message names file, line and error."""


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """Settings of a dbxdec project.

    Attributes:
        root: The directory holding ``pyproject.toml`` (or the working directory).
        pipelines: Modules or packages that define jobs.
        warehouse: Local folder for tables when running on the embedded Spark.
        settings: The whole ``[tool.dbxdec]`` table, for settings of later layers.
        distribution: The project's distribution name (``[project] name``), if any: the
            ``package_name`` of the generated wheel tasks.
    """

    root: Path
    pipelines: tuple[str, ...]
    warehouse: Path
    settings: dict[str, Any] = field(default_factory=dict)
    distribution: str | None = None


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` with a ``pyproject.toml`` or
    ``databricks.yml``; ``start`` itself when there is none."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / "databricks.yml").is_file():
            return candidate
    return here


def load_config(start: Path | None = None, *, pipelines: Sequence[str] = ()) -> ProjectConfig:
    """Read ``[tool.dbxdec]``; ``pipelines`` (from ``--pipelines``) overrides the file.

    Raises:
        UsageError: the pyproject is unreadable, or no pipelines are configured.
    """
    root = find_root(start)
    table: dict[str, Any] = {}
    distribution: str | None = None
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"cannot read {pyproject}: {exc}") from None
        table = dict(document.get("tool", {}).get("dbxdec", {}))
        name = document.get("project", {}).get("name")
        distribution = name if isinstance(name, str) and name else None
    modules = tuple(pipelines) or tuple(_string_list(table.get("pipelines", []), pyproject))
    if not modules:
        raise UsageError(
            'no pipelines configured: add [tool.dbxdec] pipelines = ["your_package.pipelines"] '
            f"to {pyproject} or pass --pipelines MODULE"
        )
    warehouse = Path(str(table.get("warehouse", ".dbxdec/warehouse")))
    return ProjectConfig(
        root=root,
        pipelines=modules,
        warehouse=warehouse if warehouse.is_absolute() else root / warehouse,
        settings=table,
        distribution=distribution,
    )


def _string_list(value: object, source: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise UsageError(f"[tool.dbxdec] pipelines in {source} must be a list of module names")


def import_pipelines(
    modules: Iterable[str], *, root: Path | None = None, registry: Registry | None = None
) -> Registry:
    """Import pipeline modules (a package with all its submodules); return the registry.

    ``root`` and ``root/src`` are put on ``sys.path`` so a project's own package imports
    without being installed.

    Raises:
        PipelineImportError: a module failed to import (file, line and the error).
    """
    if root is not None:
        for path in (root / "src", root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))
    for name in modules:
        module = import_module(name)
        if hasattr(module, "__path__"):
            for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
                import_module(info.name)
    return registry if registry is not None else default_registry


def import_module(name: str, *, not_found: str | None = None) -> ModuleType:
    """Import one module, turning failures into one-line errors.

    Args:
        name: The module.
        not_found: The message when the module itself does not exist.

    Raises:
        UsageError: the module does not exist.
        PipelineImportError: it failed to import (file, line and the original error,
            which stays chained for logs).
    """
    try:
        return importlib.import_module(name)
    except SyntaxError as exc:
        raise PipelineImportError(
            f"cannot import pipelines {name!r}: syntax error at "
            f"{exc.filename}:{exc.lineno}: {exc.msg}"
        ) from exc
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise UsageError(
                not_found
                or f"pipeline module {name!r} not found (check [tool.dbxdec] pipelines or "
                "--pipelines)"
            ) from None
        raise PipelineImportError(_describe(name, exc)) from exc
    except DbxdecError as exc:
        raise PipelineImportError(f"cannot import pipelines {name!r}: {exc.render()}") from None
    except Exception as exc:
        raise PipelineImportError(_describe(name, exc)) from exc


def _describe(name: str, exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename]
    where = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
    return f"cannot import pipelines {name!r}{where}: {type(exc).__name__}: {exc}"
