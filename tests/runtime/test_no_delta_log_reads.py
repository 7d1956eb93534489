"""Static check: no code path reads a Delta table's ``_delta_log`` files.

Unity Catalog manages where a managed table's files live, so dbxdec learns about a table's
commits only through documented interfaces (the change data feed, ``DESCRIBE HISTORY``).
Two uses of the log folder are allowed, both of *local* tables (a folder of the embedded
warehouse, never a catalog table): asking whether a folder holds a Delta table at all,
``(path / DELTA_LOG).is_dir()`` (or ``.exists()``), and the one reader of a local table's
history, :func:`...runtime.storage.delta_history.read_log_commits` (the commit files as the
Delta protocol defines them, so ``undo --dry-run`` needs no JVM: issue 40), with its one
sibling :func:`...delta_history.local_table_version` (the newest commit file's number, which
a task run's pinned read of a local table takes without a query: issue 43).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "databricks_bundle_decorators"
_EXISTENCE = frozenset({"is_dir", "exists"})
LOCAL_HISTORY_READER = (
    "runtime/storage/delta_history.py",
    ("read_log_commits", "local_table_version"),
)
"""The functions allowed to read a local table's log files (see the module doc)."""


def delta_log_reads(source: str, allowed: tuple[str, ...] = ()) -> list[int]:
    """Lines of ``source`` that touch ``_delta_log`` other than to test a folder exists
    (or inside the functions ``allowed``)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in allowed:
            node.body = []  # its reads are the allowed ones
            node.decorator_list = []
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    lines: list[int] = []
    for node in ast.walk(tree):
        mentions = (isinstance(node, ast.Constant) and "_delta_log" in str(node.value)) or (
            isinstance(node, ast.Name) and node.id == "DELTA_LOG"
        )
        if mentions and not _allowed(node, parents):
            lines.append(getattr(node, "lineno", 0))
    return lines


def _allowed(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    if isinstance(parent, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "DELTA_LOG" for t in parent.targets
    ):
        return True  # the constant's definition
    if isinstance(parent, ast.ImportFrom | ast.alias | ast.Expr):
        return True  # an import, or a docstring that mentions it
    if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div)):
        return False
    if parent.right is not node:
        return False
    attribute = parents.get(parent)
    call = parents.get(attribute) if attribute is not None else None
    return (
        isinstance(attribute, ast.Attribute)
        and attribute.attr in _EXISTENCE
        and isinstance(call, ast.Call)
        and call.func is attribute
    )


def test_the_package_never_reads_delta_log_files() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (
            lines := delta_log_reads(
                path.read_text(),
                LOCAL_HISTORY_READER[1]
                if str(path.relative_to(PACKAGE)) == LOCAL_HISTORY_READER[0]
                else (),
            )
        )
    }
    assert found == {}


def test_a_planted_delta_log_read_fails_the_check() -> None:
    module = (PACKAGE / "runtime" / "triggers" / "triggered.py").read_text()
    assert delta_log_reads(module) == []
    planted = [
        "import json\nfrom ..storage.delta import DELTA_LOG\n"
        "def last(path):\n    return json.loads((path / DELTA_LOG / '0.json').read_text())\n",
        "def commits(spark, path):\n    return spark.read.json(f'{path}/_delta_log/*.json')\n",
        "def listing(path):\n    return sorted((path / '_delta_log').iterdir())\n",
    ]
    for text in planted:
        assert delta_log_reads(module + "\n" + text), text
    assert delta_log_reads("def has(path):\n    return (path / DELTA_LOG).is_dir()\n") == []


def test_only_the_local_history_reader_is_allowed_to_read_the_log() -> None:
    module = (PACKAGE / LOCAL_HISTORY_READER[0]).read_text()
    assert delta_log_reads(module, LOCAL_HISTORY_READER[1]) == []
    assert delta_log_reads(module), "the reader reads the log: the allowance is what passes it"
    planted = "def other(path):\n    return list((path / DELTA_LOG).glob('*.json'))\n"
    assert delta_log_reads(module + planted, LOCAL_HISTORY_READER[1])
