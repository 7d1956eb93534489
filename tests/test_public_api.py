"""The public API is a file in the repo: changing it is a visible diff.

Regenerate with ``python tests/test_public_api.py > docs/public_api.txt`` after a
deliberate change.
"""

from __future__ import annotations

import importlib
from pathlib import Path

PUBLIC_MODULES = [
    "databricks_bundle_decorators",
    "databricks_bundle_decorators.backfill",
    "databricks_bundle_decorators.checks",
    "databricks_bundle_decorators.decorators",
    "databricks_bundle_decorators.io_managers",
    "databricks_bundle_decorators.testing",
]
SNAPSHOT = Path(__file__).resolve().parents[1] / "docs" / "public_api.txt"


def current_api() -> str:
    lines = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for exported in sorted(getattr(module, "__all__", [])):
            lines.append(f"{name}.{exported}")
    return "\n".join(lines) + "\n"


def test_public_api_matches_snapshot() -> None:
    assert current_api() == SNAPSHOT.read_text(), (
        "the public API changed; if on purpose, regenerate docs/public_api.txt "
        "(python tests/test_public_api.py > docs/public_api.txt)"
    )


def test_seed_001_import_paths() -> None:
    from databricks_bundle_decorators.backfill import (  # noqa: F401
        BackfillDef,
        DailyBackfill,
        HourlyBackfill,
        MonthlyBackfill,
        StaticBackfill,
        WeeklyBackfill,
        get_backfill_key,
        get_backfill_keys,
        get_run_logical_date,
    )
    from databricks_bundle_decorators.decorators import all_partitions

    assert callable(all_partitions)


def test_exported_names_exist() -> None:
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for exported in getattr(module, "__all__", []):
            assert hasattr(module, exported), f"{name}.__all__ names missing {exported}"


if __name__ == "__main__":
    print(current_api(), end="")


def test_the_key_column_helper_is_exported_from_the_package_root() -> None:
    import databricks_bundle_decorators as dbxdec
    from databricks_bundle_decorators.runtime.core.key_columns import backfill_key_column

    assert dbxdec.backfill_key_column is backfill_key_column
    assert "backfill_key_column" in dbxdec.__all__


def test_paths_written_outside_the_package_still_import() -> None:
    """The wheel's entry points and the imports ``dbxdec init`` writes into a project
    name module paths; moving a module must not break a project built before the move."""
    import ast
    import importlib.util
    import re

    root = Path(__file__).resolve().parents[1]
    templates = root / "src" / "databricks_bundle_decorators" / "templates"
    entry_points = re.findall(
        r'^\S+ = "(databricks_bundle_decorators\.[\w.]+:\w+)"$',
        (root / "pyproject.toml").read_text()
        + (templates / "project" / "pyproject.toml.tmpl").read_text(),
        flags=re.MULTILINE,
    )
    assert len(entry_points) >= 3  # dbxdec-run, dbxdec-monitor, the template's dbxdec-run
    for target in entry_points:
        module, _, name = target.partition(":")
        assert hasattr(importlib.import_module(module), name), target
    for template in sorted(templates.rglob("*.py.tmpl")):
        for node in ast.walk(ast.parse(template.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "databricks_bundle_decorators"
            ):
                module = importlib.import_module(node.module or "")
                for alias in node.names:
                    assert hasattr(module, alias.name) or importlib.util.find_spec(
                        f"{node.module}.{alias.name}"
                    ), f"{template.name}: from {node.module} import {alias.name}"
