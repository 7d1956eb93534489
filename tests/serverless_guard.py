"""The serverless conf rule, enforced in tests (see runtime/session/serverless_rules.py).

1. :func:`guarded_conf`: while active, ``RuntimeConfig.set``/``unset`` called from
   dbxdec's own code raises for a property off the serverless list, unless the caller is
   one of :data:`LOCAL_ONLY` (test code and user pipelines may set what they like on the
   local session: they stand in for nothing on Databricks).
2. :func:`violations`: a scan of source text for ``conf.set``/``conf.unset``,
   ``.config(`` and ``SET`` SQL literals.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from databricks_bundle_decorators.runtime.session.serverless_rules import check_conf

PACKAGE = "databricks_bundle_decorators"
RULES_MODULE = f"{PACKAGE}.runtime.session.serverless_rules"
LOCAL_ONLY: dict[tuple[str, str], str] = {
    # (module, function): why it may set any Spark property.
    (f"{PACKAGE}.runtime.session.spark", "_local_spark_session"): (
        "builds or reuses the embedded local session (local_spark_session); Databricks "
        "sessions come from databricks_spark_session, which never calls it"
    ),
    (f"{PACKAGE}.runtime.session.spark_remote", "remote_spark_session"): (
        "connects a LOCAL run to a Spark Connect server (--spark-remote) and gives it the "
        "embedded session's settings; Databricks sessions never come from it"
    ),
}
_SET_SQL = re.compile(r"\s*SET\s")  # SQL keyword in capitals, as dbxdec writes SQL


@contextmanager
def guarded_conf() -> Iterator[None]:
    """Make dbxdec's own ``conf.set``/``unset`` of an off-list property raise, on classic
    sessions (``RuntimeConfig``) and on Spark Connect ones (``RuntimeConf``, the lane of
    tests/connect_lane.py)."""
    from pyspark.sql.conf import RuntimeConfig

    classes: list[Any] = [RuntimeConfig]
    try:
        from pyspark.sql.connect.conf import RuntimeConf
    except ImportError:  # PySpark without its Connect client's dependencies
        pass
    else:
        classes.append(RuntimeConf)

    def allowed(name: str) -> None:
        caller = sys._getframe(2)
        module = str(caller.f_globals.get("__name__", ""))
        if not module.startswith(PACKAGE) or module == RULES_MODULE:
            return  # test code or a user's pipeline; serverless_rules checked it itself
        if (module, caller.f_code.co_name) in LOCAL_ONLY:
            return
        check_conf(name)

    def guard(cls: Any) -> tuple[Any, Any]:
        original_set, original_unset = cls.set, cls.unset

        def guarded_set(self: Any, key: str, value: Any) -> None:
            allowed(key)
            original_set(self, key, value)

        def guarded_unset(self: Any, key: str) -> None:
            allowed(key)
            original_unset(self, key)

        cls.set, cls.unset = guarded_set, guarded_unset
        return original_set, original_unset

    originals = [(cls, guard(cls)) for cls in classes]
    try:
        yield
    finally:
        for cls, (original_set, original_unset) in originals:
            cls.set, cls.unset = original_set, original_unset


def violations(source: str, module: str) -> list[str]:
    """``module:line: what`` for each conf change in ``source`` outside the allowed places."""
    if module == RULES_MODULE:
        return []
    tree = ast.parse(source)
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        what = _what(node)
        if what and (module, function) not in LOCAL_ONLY:
            found.append(f"{module}:{getattr(node, 'lineno', '?')}: {what}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "")
    return found


def _what(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr, owner = node.func.attr, node.func.value
        if attr in ("set", "unset") and isinstance(owner, ast.Attribute) and owner.attr == "conf":
            return f"conf.{attr}(...)"
        if attr == "config":
            return ".config(...)"
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _SET_SQL.match(node.value)
    ):
        return f"SQL literal {node.value[:40]!r}"
    return None
