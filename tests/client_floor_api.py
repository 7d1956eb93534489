"""The PySpark API of dbxdec's client floor, read from the Databricks Connect wheel.

The floor (``bundle/client_floor.py``) is serverless environment 2, whose client is
Databricks Connect 15.4 (Spark 3.5's ``pyspark``). Its wheel cannot share an environment
with the ``pyspark`` the tests run on, so it is never installed: ``make setup`` downloads
it (``python -m tests.client_floor_api``; ``pip download --no-deps``) into a cache outside
the repository, like the Delta jars -- ``$DBXDEC_CLIENTS_DIR``, else
``$XDG_CACHE_HOME/dbxdec/clients``, else ``~/.cache/dbxdec/clients`` -- and the test reads
its ``pyspark/`` sources by AST.

What is compared, kept simple and honest:

- every ``from pyspark... import X`` / ``import pyspark...`` of a Databricks-path module,
  and every ``alias.name`` on an imported pyspark module (``F.col``): the module and the
  name must exist in the floor's ``pyspark``;
- every attribute name the module uses (``frame.schema.toDDL()``) that is a member of a
  Spark class (:data:`SPARK_CLASSES`: DataFrame, Column, StructType, ...) in the
  ``pyspark`` the tests run on but of no such class in the floor: the objects' types are
  not inferred, the names of the API the floor lacks are few and specific.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from databricks_bundle_decorators.bundle.client_floor import FLOOR_CONNECT_VERSION

CLIENTS_DIR_ENV = "DBXDEC_CLIENTS_DIR"
DISTRIBUTION = "databricks-connect"
SPARK_CLASSES: frozenset[str] = frozenset(
    {
        "Catalog",
        "Column",
        "DataFrame",
        "DataFrameNaFunctions",
        "DataFrameReader",
        "DataFrameStatFunctions",
        "DataFrameWriter",
        "DataFrameWriterV2",
        "DataType",
        "GroupedData",
        "Observation",
        "Row",
        "RuntimeConfig",
        "SparkSession",
        "StructField",
        "StructType",
        "Window",
        "WindowSpec",
    }
)
"""The classes whose members the Databricks path calls on Spark objects."""


def clients_dir() -> Path:
    """Where the floor's client wheel is cached (not created)."""
    configured = os.environ.get(CLIENTS_DIR_ENV)
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dbxdec" / "clients"


def floor_wheel(folder: Path | None = None) -> Path | None:
    """The cached Databricks Connect wheel of the floor, or ``None``."""
    wheels = sorted(
        (folder or clients_dir()).glob(f"databricks_connect-{FLOOR_CONNECT_VERSION}-*.whl")
    )
    return wheels[0] if wheels else None


def download_floor_wheel(folder: Path | None = None) -> Path:
    """The floor's wheel, downloaded from the package index when not cached (never
    installed: ``pip download --no-deps``)."""
    target = folder or clients_dir()
    found = floor_wheel(target)
    if found is not None:
        return found
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
            *("--only-binary=:all:", "--dest", str(target)),
            f"{DISTRIBUTION}=={FLOOR_CONNECT_VERSION}",
        ],
        check=True,
    )
    found = floor_wheel(target)
    if found is None:
        raise SystemExit(f"pip left no {DISTRIBUTION} {FLOOR_CONNECT_VERSION} wheel in {target}")
    return found


# -- the API of a pyspark source tree --------------------------------------------------------


class SparkApi:
    """The API of a pyspark source tree: :meth:`names` of a module (its top-level names
    and submodules) and :attr:`members`, the member names of the :data:`SPARK_CLASSES`
    as ``pyspark.sql`` defines them (classic and Connect; not pandas-on-Spark, whose
    ``DataFrame`` is another class). Modules are parsed when first needed."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self._sources = sources
        self._trees: dict[str, ast.Module | None] = {}
        self._names: dict[str, frozenset[str]] = {}
        self._members: frozenset[str] | None = None

    def has(self, module: str) -> bool:
        """Whether the tree has ``module``."""
        return module in self._sources

    def names(self, module: str) -> frozenset[str]:
        """``module``'s top-level names (empty when there is no such module)."""
        if module not in self._names:
            tree = self._tree(module)
            self._names[module] = frozenset() if tree is None else _top_level(module, tree, self)
        return self._names[module]

    def submodules(self, module: str) -> set[str]:
        prefix = module + "."
        return {
            m[len(prefix) :]
            for m in self._sources
            if m.startswith(prefix) and "." not in m[len(prefix) :]
        }

    def is_package(self, module: str) -> bool:
        return any(m.startswith(module + ".") for m in self._sources)

    def _tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            try:
                self._trees[module] = ast.parse(self._sources[module])
            except (KeyError, SyntaxError):  # none, or for another Python: not API
                self._trees[module] = None
        return self._trees[module]

    @property
    def members(self) -> frozenset[str]:
        if self._members is None:
            classes: dict[str, list[tuple[ast.ClassDef, dict[str, str]]]] = {}
            for module in self._sources:
                if not module.startswith("pyspark.sql.") or ".proto" in module:
                    continue  # the generated protobuf modules define no API class
                tree = self._tree(module)
                if tree is None:
                    continue
                renamed = _renamed_imports(tree)
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        classes.setdefault(node.name, []).append((node, renamed))
            found: set[str] = set()
            for name in SPARK_CLASSES:
                found |= _members(name, classes, set())
            self._members = frozenset(found)
        return self._members


def wheel_sources(wheel: Path) -> dict[str, str]:
    """``pyspark`` module name -> source text, from a wheel."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            _module_of(name): archive.read(name).decode("utf-8")
            for name in archive.namelist()
            if name.startswith("pyspark/") and name.endswith(".py")
        }


def installed_sources() -> dict[str, str]:
    """``pyspark`` module name -> source text, of the pyspark the tests run on."""
    import pyspark

    root = Path(pyspark.__file__).parent
    return {
        _module_of(str(path.relative_to(root.parent))): path.read_text(encoding="utf-8")
        for path in root.rglob("*.py")
    }


def _module_of(path: str) -> str:
    parts = path.removesuffix(".py").replace("\\", "/").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level(module: str, tree: ast.Module, api: SparkApi) -> frozenset[str]:
    names = api.submodules(module)
    for node in _top_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name)
                    continue
                source = _absolute(module, node, is_package=api.is_package(module))
                if source != module:
                    names |= {n for n in api.names(source) if not n.startswith("_")}
    return frozenset(names)


def _top_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking into ``if``/``try`` blocks (``TYPE_CHECKING``,
    optional imports)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_statements([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            yield from _top_statements([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                yield from _top_statements(handler.body)
        else:
            yield node


def _absolute(module: str, node: ast.ImportFrom, *, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _renamed_imports(tree: ast.Module) -> dict[str, str]:
    """``alias -> original`` of a module's ``from ... import X as Y`` (base classes are
    often imported under another name)."""
    return {
        a.asname: a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.asname
    }


def _members(
    name: str, classes: Mapping[str, list[tuple[ast.ClassDef, dict[str, str]]]], seen: set[str]
) -> set[str]:
    if name in seen:
        return set()
    seen.add(name)
    found: set[str] = set()
    for node, renamed in classes.get(name, []):
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(item.name)
            elif isinstance(item, ast.Assign):
                found |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                found.add(item.target.id)
        for base in node.bases:
            base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
            if isinstance(base_name, str):
                found |= _members(renamed.get(base_name, base_name), classes, seen)
    return found


# -- what a module uses ---------------------------------------------------------------------


NOT_SPARK_MEMBERS: Mapping[str, str] = {
    # attribute name: why its uses on the Databricks path are not on a Spark object
    "exists": "pathlib.Path.exists (Spark 4's DataFrame.exists is a scalar subquery)",
}
"""Names of Spark 4 class members that the Databricks path uses on other objects."""


def floor_problems(module: str, text: str, floor: SparkApi, reference: SparkApi) -> list[str]:
    """The PySpark names ``module`` uses that the floor lacks, one line each
    (``module:line: ...``). An import inside ``try: ... except ImportError`` is guarded
    (the code copes without it) and not judged."""
    tree = ast.parse(text)
    guarded = _guarded(tree)
    modules: dict[str, str] = {}  # local name -> the pyspark module it stands for
    problems = []

    def lacks(where: ast.AST, what: str) -> None:
        problems.append(f"{module}:{getattr(where, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "pyspark":
                    continue
                if not floor.has(alias.name) and id(node) not in guarded:
                    lacks(node, f"imports {alias.name}, a module the floor's pyspark has not")
                if alias.asname:
                    modules[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyspark":
            source = node.module or ""
            if id(node) in guarded:
                continue
            if not floor.has(source):
                lacks(node, f"imports from {source}, a module the floor's pyspark has not")
                continue
            for alias in node.names:
                if alias.name != "*" and alias.name not in floor.names(source):
                    lacks(node, f"imports {alias.name} from {source}: not in the floor's pyspark")
                if reference.has(f"{source}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr.startswith("_"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in modules:
            source = modules[node.value.id]
            if node.attr not in floor.names(source):
                lacks(node, f"uses {source}.{node.attr}: not in the floor's pyspark")
        elif (
            node.attr in reference.members
            and node.attr not in floor.members
            and node.attr not in NOT_SPARK_MEMBERS
        ):
            lacks(
                node,
                f".{node.attr}: a member of a Spark class (DataFrame, Column, StructType, ...) "
                "in the tests' pyspark that no such class of the floor's pyspark has",
            )
    return sorted(set(problems))


def _guarded(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside a ``try`` whose handler catches ``ImportError``."""
    catches = {"ImportError", "ModuleNotFoundError"}
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = {
            n.id
            for h in node.handlers
            if h.type is not None
            for n in ast.walk(h.type)
            if isinstance(n, ast.Name)
        }
        if caught & catches:
            found |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return found


if __name__ == "__main__":  # make setup
    print(f"{DISTRIBUTION} {FLOOR_CONNECT_VERSION} (client floor): {download_floor_wheel()}")
