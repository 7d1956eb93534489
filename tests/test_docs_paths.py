"""Every path into dbxdec's sources that the docs, README.md and CONTRIBUTING.md name
exists: ``src/databricks_bundle_decorators/...`` paths, paths relative to the package
(``launch/run/scheduler.py``, ``runtime/running/dispatch.py``) and dotted module paths
(``databricks_bundle_decorators.launch.plan.request``). Moving a module without updating
the page that names it fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "databricks_bundle_decorators"
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")])

_TOP = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_"))
# A path starts at src/databricks_bundle_decorators/, databricks_bundle_decorators/ or a
# directory of the package (launch/, runtime/, ...) and is not the tail of another path
# (tests/launch/test_plan.py, src/my_project/...).
_PATH = re.compile(
    r"(?<![\w/.-])(?:src/)?(?:databricks_bundle_decorators/)?"
    rf"(?:{'|'.join(map(re.escape, _TOP))})(?:/\w+)*(?:\.py|/)?(?![\w/-]|\.\w)"
)
# Names of other projects the pages quote on purpose: the earlier releases' parameter
# constant that docs/migrating.md contrasts with dbxdec's (a path like
# ``bundle/config/.../validate_target_mode.go`` of the Databricks CLI is not a .py path).
_ELSEWHERE = {"databricks_bundle_decorators.backfill.EXACT_BACKFILL_PARAM"}
_MODULE = re.compile(r"(?<![\w.])databricks_bundle_decorators(?:\.\w+)+")


def named_paths(text: str) -> list[str]:
    """The source paths ``text`` names, relative to the package."""
    found = []
    for match in _PATH.finditer(text):
        path = re.sub(r"^(src/)?(databricks_bundle_decorators/)?", "", match.group(0))
        if "/" in path.rstrip("/"):  # a bare "launch/" is a word, not a claim
            found.append(path.rstrip("/"))
    return found


def path_exists(path: str) -> bool:
    return (PACKAGE / path).exists()


def module_exists(dotted: str) -> bool:
    """Whether ``dotted`` is a module of dbxdec, or a name a module of it defines."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_source_paths_named_in_the_docs_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = [path for path in named_paths(text) if not path_exists(path)]
    missing += [
        name for name in _MODULE.findall(text) if name not in _ELSEWHERE and not module_exists(name)
    ]
    assert not missing, f"{page.relative_to(ROOT)} names what does not exist: {missing}"


def test_docs_path_check_sees_missing_paths() -> None:
    """The checker itself must be able to fail."""
    text = (
        "code: `launch/scheduler.py`; `src/databricks_bundle_decorators/launch/ledger.py`;"
        " (launch/run/scheduler.py) and tests/launch/test_plan.py, src/my_project/x.py,"
        " bundle/config/validate_target_mode.go"
    )
    paths = named_paths(text)
    assert paths == ["launch/scheduler.py", "launch/ledger.py", "launch/run/scheduler.py"]
    assert [path_exists(p) for p in paths] == [False, False, True]
    assert not module_exists("databricks_bundle_decorators.launch.scheduler")
    assert not module_exists("databricks_bundle_decorators.launch.plan.request.Nope")
    assert module_exists("databricks_bundle_decorators.launch.plan.request.Connection")
    assert module_exists("databricks_bundle_decorators.backfill.QuartzSchedule")
