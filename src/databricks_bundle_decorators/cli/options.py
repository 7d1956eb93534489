"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..bundle.project import ProjectConfig, import_pipelines, load_config
from ..definitions import Registry
from ..errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


def pipelines_option(fn: F) -> F:
    """``--pipelines MODULE`` (repeatable) and ``--project DIR``."""
    fn = click.option(
        "--pipelines",
        "pipelines",
        multiple=True,
        metavar="MODULE",
        help="Module or package defining jobs (repeatable). Default: [tool.dbxdec] pipelines.",
    )(fn)
    fn = click.option(
        "--project",
        "project",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Project directory (default: nearest with pyproject.toml or databricks.yml).",
    )(fn)
    return fn


def load_project(
    project: Path | None, pipelines: tuple[str, ...]
) -> tuple[ProjectConfig, Registry]:
    """Read the project config and import its pipelines."""
    config = load_config(project, pipelines=pipelines)
    return config, import_pipelines(config.pipelines, root=config.root)


def parse_params(values: tuple[str, ...]) -> dict[str, str]:
    """``--param NAME=VALUE`` options as a mapping (a repeated name: last wins).

    Raises:
        UsageError: an item without ``=`` or without a name.
    """
    parsed: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {item!r}: expected NAME=VALUE")
        parsed[name] = value
    return parsed
