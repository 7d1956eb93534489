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


# -- launch/ in rooms ------------------------------------------------------------------
# ``launch.ROOMS`` lists the subpackages of launch/ lowest first; a module of a room
# imports only from its own room, rooms before it and the layers above launch. Every
# import counts: ``if TYPE_CHECKING:`` blocks and imports inside functions too
# (``ast.walk`` sees them all), so a type-only edge cannot hide a wrong-way import.

LAUNCH = PACKAGE / "launch"


def _launch_targets(source: str, depth: int, own: str) -> set[str]:
    """The names directly under ``launch`` (rooms or flat modules) that a module of
    room ``own``, ``depth`` packages below ``launch``, imports; ``own`` for its room."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level <= depth:
                found.add(own)  # inside its own room
            elif node.level == depth + 1:  # relative to launch/ itself
                head = (node.module or "").split(".")[0]
                found.update([head] if head else [alias.name for alias in node.names])
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(_absolute_launch_target(node.module, node.names))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_absolute_launch_target(alias.name, []))
    return found


def _absolute_launch_target(module: str, names: list[ast.alias]) -> list[str]:
    parts = module.split(".")
    if parts[:2] != ["databricks_bundle_decorators", "launch"]:
        return []
    return [parts[2]] if len(parts) > 2 else [alias.name for alias in names]


def _room_problems(source: str, depth: int, room: str, rooms: list[str]) -> list[str]:
    """What a module of ``room`` imports from ``launch`` that it may not: a later room, a
    flat module of launch/ (the facade) or a name that is no room."""
    allowed = set(rooms[: rooms.index(room) + 1])
    return sorted(_launch_targets(source, depth, room) - allowed)


def _rooms() -> list[str]:
    from databricks_bundle_decorators.launch import ROOMS

    return list(ROOMS)


ROOM_FILES = [
    pytest.param(path, id=str(path.relative_to(PACKAGE)))
    for path in sorted(LAUNCH.rglob("*.py"))
    if path.parent != LAUNCH
]


@pytest.mark.parametrize("path", ROOM_FILES)
def test_launch_rooms_import_only_earlier_rooms(path: Path) -> None:
    rooms = _rooms()
    room, *_ = path.relative_to(LAUNCH).parts
    assert room in rooms, f"launch/{room}/ is not in launch.ROOMS"
    depth = len(path.relative_to(LAUNCH).parts) - 1
    problems = _room_problems(path.read_text(), depth, room, rooms)
    assert not problems, (
        f"{path.relative_to(LAUNCH)} imports {problems}: a room imports only itself and "
        f"the rooms before it in launch.ROOMS {rooms}"
    )


def test_launch_rooms_are_the_subpackages() -> None:
    """ROOMS names every subpackage of launch/, once; only the facade stays flat."""
    rooms = _rooms()
    found = sorted(p.name for p in LAUNCH.iterdir() if (p / "__init__.py").exists())
    assert sorted(rooms) == found and len(set(rooms)) == len(rooms)
    flat = sorted(p.name for p in LAUNCH.glob("*.py"))
    assert flat == ["__init__.py", "launcher.py"]


def test_launch_files_stay_under_400_lines() -> None:
    long = {
        str(p.relative_to(LAUNCH)): n
        for p in LAUNCH.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"split these along a responsibility: {long}"


def test_room_check_sees_violations() -> None:
    """The room checker itself must be able to fail: upward imports at module level,
    under ``TYPE_CHECKING`` and inside a function, relative and absolute, and the facade."""
    rooms = ["plan", "ledger", "run"]
    assert _room_problems("from ..run.scheduler import Scheduler\n", 1, "ledger", rooms) == ["run"]
    type_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..run import x\n"
    assert _room_problems(type_only, 1, "plan", rooms) == ["run"]
    in_function = "def f():\n    from ..ledger.ledger import Ledger\n"
    assert _room_problems(in_function, 1, "plan", rooms) == ["ledger"]
    absolute = "from databricks_bundle_decorators.launch.run.events import Counts\n"
    assert _room_problems(absolute, 1, "ledger", rooms) == ["run"]
    assert _room_problems("from .. import run\n", 1, "plan", rooms) == ["run"]
    assert _room_problems("from ..launcher import PreparedBackfill\n", 1, "run", rooms) == [
        "launcher"
    ]
    # allowed: its own room, earlier rooms, the layers above launch
    fine = "from .x import y\nfrom ..plan.plan import z\nfrom ...errors import UsageError\n"
    assert _room_problems(fine, 1, "ledger", rooms) == []
