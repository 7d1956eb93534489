"""Imports flow down the layers; a module never imports a layer below its own.

Order: backfill (pure values, no other layer) -> definitions -> bundle -> runtime ->
launch -> cli -> testing. ``errors``, ``atomic`` and the thin public modules sit outside the
layers.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "databricks_bundle_decorators"
ORDER = ["backfill", "definitions", "bundle", "runtime", "launch", "cli", "testing"]
SHARED = {"errors", "atomic"}


def _layer_imports(source: str, layer_depth: int) -> set[str]:
    """Top-level package modules imported by a module ``layer_depth`` packages deep."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level <= layer_depth:
                    continue  # inside the same layer package
                target = (node.module or "").split(".")[0]
                if not target:
                    found.update(alias.name for alias in node.names)
                else:
                    found.add(target)
            elif node.module and node.module.startswith("databricks_bundle_decorators."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("databricks_bundle_decorators."):
                    found.add(alias.name.split(".")[1])
    return found


LAYER_FILES = [
    pytest.param(layer, path, id=str(path.relative_to(PACKAGE)))
    for layer in ORDER
    for path in sorted((PACKAGE / layer).rglob("*.py"))
]


@pytest.mark.parametrize(("layer", "path"), LAYER_FILES)
def test_imports_only_from_layers_above(layer: str, path: Path) -> None:
    allowed = set(ORDER[: ORDER.index(layer) + 1]) | SHARED
    depth = len(path.relative_to(PACKAGE).parts) - 1
    imported = _layer_imports(path.read_text(), depth) & (set(ORDER) | SHARED | {"decorators"})
    assert imported <= allowed, f"{path.name} in {layer}/ imports {sorted(imported - allowed)}"


def test_layer_check_sees_violations() -> None:
    """The checker itself must be able to fail."""
    assert _layer_imports("from ..runtime import x\n", 1) == {"runtime"}
    assert _layer_imports("from ...runtime.io import x\n", 2) == {"runtime"}
    assert _layer_imports("from databricks_bundle_decorators.launch import y\n", 1) == {"launch"}
    assert _layer_imports("from .sibling import z\n", 1) == set()
    assert _layer_imports("from .. import errors\n", 1) == {"errors"}


PUBLIC_MODULES = {"backfill", "checks", "decorators", "io_managers"}
EXAMPLE_FILES = [
    pytest.param(path, id=str(path.relative_to(PACKAGE)))
    for path in sorted((PACKAGE / "examples").rglob("*.py"))
]


@pytest.mark.parametrize("path", EXAMPLE_FILES)
def test_examples_import_only_the_public_api(path: Path) -> None:
    """The shipped examples are a leaf: they use dbxdec as a user's project does."""
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            imported.add(f"relative {node.module or ''}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "databricks_bundle_decorators" and len(parts) > 1:
                imported.add(parts[1])
    assert imported <= PUBLIC_MODULES, f"{path.name} imports {sorted(imported - PUBLIC_MODULES)}"


BUNDLE_GENERATION = ("databricks_bundle_decorators.bundle", "databricks.bundles")


def _loaded_after_import(module: str) -> list[str]:
    """The bundle-generation modules in ``sys.modules`` after importing ``module`` in a
    fresh interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(completed.stdout)
    return [
        name
        for name in loaded
        if any(name == root or name.startswith(f"{root}.") for root in BUNDLE_GENERATION)
    ]


def test_dbxdec_run_imports_no_bundle_generation_code() -> None:
    """``dbxdec-run`` on the cluster loads the runtime and the definitions, not codegen."""
    assert _loaded_after_import("databricks_bundle_decorators.runtime.entrypoint") == []


def test_bundle_import_check_sees_bundle_code() -> None:
    """The checker itself must be able to fail."""
    loaded = _loaded_after_import("databricks_bundle_decorators.bundle.load")
    assert "databricks_bundle_decorators.bundle.codegen" in loaded
