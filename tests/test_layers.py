"""Imports flow down the layers; a module never imports a layer below its own.

Order: backfill (pure values, no other layer) -> definitions -> bundle -> runtime ->
launch -> app -> cli -> testing. ``errors``, ``atomic`` and the thin public modules sit outside the
layers.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "databricks_bundle_decorators"
ORDER = ["backfill", "definitions", "bundle", "runtime", "launch", "app", "cli", "testing"]
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


def _loaded_after_import(module: str, roots: tuple[str, ...] = BUNDLE_GENERATION) -> list[str]:
    """The modules under ``roots`` (bundle generation's) in ``sys.modules`` after importing
    ``module`` in a fresh interpreter."""
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
        if any(name == root or name.startswith(f"{root}.") for root in roots)
    ]


def test_dbxdec_run_imports_no_bundle_generation_code() -> None:
    """``dbxdec-run`` on the cluster loads the runtime and the definitions, not codegen."""
    assert _loaded_after_import("databricks_bundle_decorators.runtime.entrypoint") == []


RUNNING_ROOMS = tuple(
    f"databricks_bundle_decorators.runtime.{room}"
    for room in ("session", "storage", "checks", "io", "programs", "triggers", "running")
)


def test_generating_a_bundle_loads_no_task_running_code() -> None:
    """Code generation (and the package root) import the runtime's core room at most: not
    Spark I/O, checks or the local runner, which cost a sixth of a generation's start-up."""
    assert _loaded_after_import("databricks_bundle_decorators.bundle.load", RUNNING_ROOMS) == []
    loaded = _loaded_after_import(
        "databricks_bundle_decorators.runtime.running.local", RUNNING_ROOMS
    )
    assert "databricks_bundle_decorators.runtime.io" in loaded  # the check can fail


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


def _launch_targets(source: str, depth: int, own: str, layer: str = "launch") -> set[str]:
    """The names directly under ``layer`` (rooms or flat modules) that a module of
    room ``own``, ``depth`` packages below ``layer``, imports; ``own`` for its room."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level <= depth:
                found.add(own)  # inside its own room
            elif node.level == depth + 1:  # relative to the layer's package itself
                head = (node.module or "").split(".")[0]
                found.update([head] if head else [alias.name for alias in node.names])
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(_absolute_launch_target(node.module, node.names, layer))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_absolute_launch_target(alias.name, [], layer))
    return found


def _absolute_launch_target(
    module: str, names: list[ast.alias], layer: str = "launch"
) -> list[str]:
    parts = module.split(".")
    if parts[:2] != ["databricks_bundle_decorators", layer]:
        return []
    return [parts[2]] if len(parts) > 2 else [alias.name for alias in names]


def _room_problems(
    source: str, depth: int, room: str, rooms: list[str], layer: str = "launch"
) -> list[str]:
    """What a module of ``room`` imports from ``layer`` that it may not: a later room, a
    flat module of the layer (launch's facade, runtime's entry modules) or a name that
    is no room."""
    allowed = set(rooms[: rooms.index(room) + 1])
    return sorted(_launch_targets(source, depth, room, layer) - allowed)


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


# -- runtime/ in rooms -----------------------------------------------------------------
# ``runtime.ROOMS`` lists the subpackages of runtime/ lowest first, checked as launch's
# rooms are (every import counts, ``TYPE_CHECKING`` and function-level ones too). Only
# the modules whose dotted paths are written outside the package stay flat: the entry
# modules (``dbxdec-run = "...runtime.entrypoint:main"`` in wheels, generated notebooks)
# and ``spark.py`` (scaffolded projects' tests import ``runtime.spark``). They may import
# every room and no room imports them.

RUNTIME = PACKAGE / "runtime"
RUNTIME_FLAT = [
    "__init__.py",
    "entrypoint.py",
    "monitor_entry.py",
    "notebook_entry.py",
    "spark.py",
]


def _runtime_rooms() -> list[str]:
    from databricks_bundle_decorators.runtime import ROOMS

    return list(ROOMS)


RUNTIME_ROOM_FILES = [
    pytest.param(path, id=str(path.relative_to(PACKAGE)))
    for path in sorted(RUNTIME.rglob("*.py"))
    if path.parent != RUNTIME
]


@pytest.mark.parametrize("path", RUNTIME_ROOM_FILES)
def test_runtime_rooms_import_only_earlier_rooms(path: Path) -> None:
    rooms = _runtime_rooms()
    room, *_ = path.relative_to(RUNTIME).parts
    assert room in rooms, f"runtime/{room}/ is not in runtime.ROOMS"
    depth = len(path.relative_to(RUNTIME).parts) - 1
    problems = _room_problems(path.read_text(), depth, room, rooms, "runtime")
    assert not problems, (
        f"{path.relative_to(RUNTIME)} imports {problems}: a room imports only itself and "
        f"the rooms before it in runtime.ROOMS {rooms}"
    )


def test_runtime_rooms_are_the_subpackages() -> None:
    """ROOMS names every subpackage of runtime/, once; only the modules whose paths are
    written outside the package stay flat."""
    rooms = _runtime_rooms()
    found = sorted(p.name for p in RUNTIME.iterdir() if (p / "__init__.py").exists())
    assert sorted(rooms) == found and len(set(rooms)) == len(rooms)
    assert sorted(p.name for p in RUNTIME.glob("*.py")) == RUNTIME_FLAT


def _room_docstring_problems(package: Path) -> list[str]:
    """What a room's ``__init__`` docstring fails to say: what it may import, and each
    of the room's modules by name (what it owns)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    problems = [] if "import" in doc else ["what it may import"]
    owned = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
    return problems + [f"``{name}``" for name in owned if f"``{name}``" not in doc]


@pytest.mark.parametrize(
    "package",
    [
        pytest.param(p, id=str(p.relative_to(PACKAGE)))
        for layer in ("runtime", "launch", "cli", "testing")
        for p in sorted((PACKAGE / layer).iterdir())
        if (p / "__init__.py").exists()
    ],
)
def test_room_docstrings_say_what_they_own_and_may_import(package: Path) -> None:
    problems = _room_docstring_problems(package)
    assert not problems, f"{package.relative_to(PACKAGE)}/__init__.py does not name {problems}"


def test_room_docstring_check_sees_a_missing_module(tmp_path: Path) -> None:
    """The checker itself must be able to fail: a module the docstring does not name,
    and a docstring silent on imports."""
    (tmp_path / "__init__.py").write_text('"""Owns ``a``. May import nothing."""\n')
    (tmp_path / "a.py").write_text("")
    assert _room_docstring_problems(tmp_path) == []
    (tmp_path / "b.py").write_text("")
    assert _room_docstring_problems(tmp_path) == ["``b``"]
    (tmp_path / "__init__.py").write_text('"""Owns ``a`` and ``b``."""\n')
    assert _room_docstring_problems(tmp_path) == ["what it may import"]


def _room_graph(layer: str) -> dict[str, set[str]]:
    """Room -> the other rooms (and flat modules) of ``layer`` its modules import."""
    prefix = f"{ROOT}.{layer}."
    graph: dict[str, set[str]] = {}
    for module, targets in _module_graph(_package_sources()).items():
        if not module.startswith(prefix) or "." not in module.removeprefix(prefix):
            continue  # not inside a room of the layer
        room = module.removeprefix(prefix).split(".")[0]
        rooms = {t.removeprefix(prefix).split(".")[0] for t in targets if t.startswith(prefix)}
        graph.setdefault(room, set()).update(rooms - {room})
    for targets in graph.values():
        for target in targets:
            graph.setdefault(target, set())
    return graph


@pytest.mark.parametrize("layer", ["launch", "runtime", "cli", "testing"])
def test_no_circle_among_rooms(layer: str) -> None:
    """No room reaches itself through other rooms (imports of every kind counted)."""
    circles = _circles(_room_graph(layer))
    assert not circles, f"circles among {layer}'s rooms: " + "; ".join(
        " -> ".join(circle) for circle in circles
    )


def test_runtime_room_check_sees_violations() -> None:
    """The runtime room checker itself must be able to fail: the storage-under-checks
    order (a table format reaching up to the checks), a check reaching an IoManager
    through the ``runtime.io`` re-exports, a room importing an entry module, type-only,
    function-level and absolute imports."""
    rooms = ["core", "storage", "checks", "io", "running"]
    up = "from ..checks.metering import measure\n"
    assert _room_problems(up, 1, "storage", rooms, "runtime") == ["checks"]
    assert _room_problems("from ..io import DeltaFormat\n", 1, "checks", rooms, "runtime") == ["io"]
    entry = "def f():\n    from ..entrypoint import main\n"
    assert _room_problems(entry, 1, "running", rooms, "runtime") == ["entrypoint"]
    type_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..io import x\n"
    assert _room_problems(type_only, 1, "core", rooms, "runtime") == ["io"]
    absolute = "from databricks_bundle_decorators.runtime.running.local import run\n"
    assert _room_problems(absolute, 1, "io", rooms, "runtime") == ["running"]
    fine = "from .x import y\nfrom ..core.errors import E\nfrom ...launch import z\n"
    assert _room_problems(fine, 1, "checks", rooms, "runtime") == []


# -- cli/ and testing/ in rooms ---------------------------------------------------------
# Each has ``ROOMS`` in its ``__init__``, lowest first, checked as runtime's rooms are.
# Only the modules whose dotted paths are written outside the package stay flat:
# ``cli/main.py`` (``dbxdec = "databricks_bundle_decorators.cli.main:main"``),
# ``testing/emulator.py`` and ``testing/spark_connect.py`` (users' and tests' imports),
# ``testing/local_workspace.py`` (run by ``python -m`` from ``dbxdec emulator``).

ROOMED_FLAT = {
    "cli": ["__init__.py", "main.py"],
    "testing": ["__init__.py", "emulator.py", "local_workspace.py", "spark_connect.py"],
}


def _layer_rooms(layer: str) -> list[str]:
    module = importlib.import_module(f"databricks_bundle_decorators.{layer}")
    return list(module.ROOMS)


ROOMED_FILES = [
    pytest.param(layer, path, id=str(path.relative_to(PACKAGE)))
    for layer in ROOMED_FLAT
    for path in sorted((PACKAGE / layer).rglob("*.py"))
    if path.parent != PACKAGE / layer
]


@pytest.mark.parametrize(("layer", "path"), ROOMED_FILES)
def test_cli_and_testing_rooms_import_only_earlier_rooms(layer: str, path: Path) -> None:
    rooms = _layer_rooms(layer)
    room, *_ = path.relative_to(PACKAGE / layer).parts
    assert room in rooms, f"{layer}/{room}/ is not in {layer}.ROOMS"
    depth = len(path.relative_to(PACKAGE / layer).parts) - 1
    problems = _room_problems(path.read_text(), depth, room, rooms, layer)
    assert not problems, (
        f"{path.relative_to(PACKAGE)} imports {problems}: a room imports only itself and "
        f"the rooms before it in {layer}.ROOMS {rooms}"
    )


@pytest.mark.parametrize("layer", list(ROOMED_FLAT))
def test_cli_and_testing_rooms_are_the_subpackages(layer: str) -> None:
    """ROOMS names every subpackage, once; only the modules named outside stay flat."""
    rooms = _layer_rooms(layer)
    folder = PACKAGE / layer
    found = sorted(p.name for p in folder.iterdir() if (p / "__init__.py").exists())
    assert sorted(rooms) == found and len(set(rooms)) == len(rooms)
    assert sorted(p.name for p in folder.glob("*.py")) == ROOMED_FLAT[layer]


def test_cli_room_check_sees_violations() -> None:
    """The checker can fail for cli and testing: an input reaching up to a command, an
    output importing ``main``, a store module importing the flat emulator or an
    endpoint (type-only too)."""
    cli = ["inputs", "output", "commands"]
    up = "from ..commands.backfill_commands import backfill\n"
    assert _room_problems(up, 1, "inputs", cli, "cli") == ["commands"]
    assert _room_problems("from ..main import main\n", 1, "output", cli, "cli") == ["main"]
    testing = ["_store", "_endpoints"]
    flat = "from ..emulator import JobsEmulator\n"
    assert _room_problems(flat, 1, "_store", testing, "testing") == ["emulator"]
    type_only = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from .._endpoints._emulator_http import X\n"
    )
    assert _room_problems(type_only, 1, "_store", testing, "testing") == ["_endpoints"]
    fine = "from .._store._emulator_state import S\nfrom ...launch import z\n"
    assert _room_problems(fine, 1, "_endpoints", testing, "testing") == []


def test_room_circle_check_sees_a_circle() -> None:
    """The room-circle checker can fail: two rooms that import each other."""
    assert _circles({"io": {"checks"}, "checks": {"io"}}) == [["checks", "io", "checks"]]


# -- import circles ----------------------------------------------------------------------
# Every import of a package module is an edge, wherever it stands: at the top, under
# ``if TYPE_CHECKING:`` or inside a function. A type-only circle still ties the two files'
# meaning together; the fix is a value or protocol moved down into a module both import.

ROOT = PACKAGE.name

LAUNCH_CIRCLES_ALLOWED: frozenset[frozenset[str]] = frozenset()
"""Circles inside ``launch/`` tolerated until the lead merges the ``rooms`` branch (which
moves ``launch/`` into subpackages) and opens them; each entry is the set of modules of
one circle, e.g. ``frozenset({"launch.a", "launch.b"})``. Empty on the ``kinds`` branch
(its checker found no circle in ``launch/``); the lead empties it after the merge."""


def _module_name(path: Path) -> str:
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_imports(name: str, source: str, *, package: bool, known: set[str]) -> set[str]:
    """The ``known`` modules that module ``name`` imports anywhere in ``source``.

    ``from a.b import c`` imports module ``a.b.c`` when there is one, else ``a.b`` (the
    module or package that defines ``c``).
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in known:
                    found.add(full)
                elif target in known:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
    found.discard(name)
    return found


def _module_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the modules it imports, for ``{name: (source, is_package)}``."""
    known = set(sources)
    return {
        name: _module_imports(name, source, package=package, known=known)
        for name, (source, package) in sources.items()
    }


def _package_sources() -> dict[str, tuple[str, bool]]:
    return {
        _module_name(path): (path.read_text(), path.name == "__init__.py")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules, as a path that starts and
    ends at the group's first module (``[a, b, a]``)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the package is a few hundred modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    circles = []
    for group in groups:
        start = min(group)
        paths = {start: [start]}
        frontier = [start]
        while frontier:  # breadth first inside the group, back to the start
            node = frontier.pop(0)
            for target in sorted(graph[node] & group):
                if target == start:
                    circles.append([*paths[node], start])
                    frontier = []
                    break
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    frontier.append(target)
    return sorted(circles)


def _short(module: str) -> str:
    return module.removeprefix(f"{ROOT}.")


def test_no_import_circles() -> None:
    """No module reaches itself through imports (type-only and function-level included)."""
    circles = [
        circle
        for circle in _circles(_module_graph(_package_sources()))
        if frozenset(_short(m) for m in circle) not in LAUNCH_CIRCLES_ALLOWED
    ]
    assert not circles, "import circles: " + "; ".join(
        " -> ".join(_short(m) for m in circle) for circle in circles
    )


def test_circle_check_sees_a_type_only_circle() -> None:
    """The checker itself must be able to fail: a circle closed only by an import under
    ``if TYPE_CHECKING:`` and one closed by an import inside a function."""
    planted = {
        "pkg": ("", True),
        "pkg.a": ("from .b import B\n", False),
        "pkg.b": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
            False,
        ),
        "pkg.c": ("from pkg import a\n", False),
        "pkg.sub": ("", True),
        "pkg.sub.d": ("def f():\n    from ..sub import e\n", False),
        "pkg.sub.e": ("from . import d\n", False),
        "pkg.sub.f": ("from .. import a\n", False),  # an edge into a circle: no circle
    }
    circles = _circles(_module_graph(planted))
    assert circles == [
        ["pkg.a", "pkg.b", "pkg.c", "pkg.a"],
        ["pkg.sub.d", "pkg.sub.e", "pkg.sub.d"],
    ]
    assert (
        _circles(_module_graph({**planted, "pkg.c": ("", False), "pkg.sub.d": ("", False)})) == []
    )
