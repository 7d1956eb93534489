"""Static guards for what open-source Spark Connect accepts and serverless compute refuses.

The Connect lane (tests/connect_lane.py) catches what OSS Connect itself refuses
(``sparkContext``, RDDs, JVM handles). Serverless compute refuses more, and OSS Connect
accepts these, so they are read off the source of the Databricks-path modules
(tests/databricks_path.py) instead:

- caching: "Caching API and SQL cache commands are not supported" on serverless
  (https://docs.databricks.com/en/compute/serverless/limitations.html). A ``persist()``,
  ``cache()`` or ``cacheTable()`` call must sit in the body of a ``try`` whose handler
  catches ``Exception`` (the code then goes on without the cache).
- ``delta.tables.DeltaTable``: a JVM-backed API; on serverless Delta tables are written
  with DataFrame writes and SQL (OSS Connect refuses it too, unless the server has the
  delta-connect plugin). Not imported, not named.

The third rule, the Spark properties a job may set, is :mod:`tests.serverless_guard`'s.
"""

from __future__ import annotations

import ast

CACHING_CALLS = frozenset({"persist", "cache", "cacheTable"})
_BROAD = frozenset({"Exception", "BaseException"})


def caching_violations(source: str, module: str) -> list[str]:
    """``module:line: what`` for each caching call outside a ``try`` that catches it."""
    found: list[str] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Try):
            catches = any(_broad(handler) for handler in node.handlers)
            for child in node.body:
                visit(child, guarded or catches)
            for rest in (*node.handlers, *node.orelse, *node.finalbody):
                visit(rest, guarded)
            return
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CACHING_CALLS
            and not guarded
        ):
            found.append(f"{module}:{node.lineno}: unguarded {node.func.attr}()")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            guarded = False  # a function defined in a try runs later, outside it
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(ast.parse(source), False)
    return found


def _broad(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in _BROAD for n in names)


def delta_table_violations(source: str, module: str) -> list[str]:
    """``module:line: what`` for each import or use of ``delta.tables``/``DeltaTable``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        what = None
        if isinstance(node, ast.Import):
            if any(alias.name.startswith("delta.tables") for alias in node.names):
                what = "import delta.tables"
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").startswith("delta") and (
                (node.module or "").startswith("delta.tables")
                or any(alias.name in ("tables", "DeltaTable") for alias in node.names)
            ):
                what = f"from {node.module} import ..."
        elif (
            getattr(node, "id", None) == "DeltaTable" or getattr(node, "attr", None) == "DeltaTable"
        ):
            what = "DeltaTable"  # a name or an attribute
        if what:
            found.append(f"{module}:{getattr(node, 'lineno', '?')}: {what}")
    return found
