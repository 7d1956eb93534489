"""Loading pipelines imports every module and reports every failure with file and line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators import Registry
from databricks_bundle_decorators.definitions.loader import (
    PipelineImportError,
    import_pipelines,
    load_pipelines,
)
from databricks_bundle_decorators.errors import UsageError

GOOD = """\
from databricks_bundle_decorators import task
from {package} import registry


@registry.job
def nightly() -> None:
    @task
    def step() -> None: ...

    step()
"""


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """A package with a good module, a syntax error and a module that raises."""
    package = f"loader_case_{request.node.name.replace('[', '_').replace(']', '_')}"
    folder = tmp_path / "src" / package
    (folder / "nested").mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from databricks_bundle_decorators import Registry\n\nregistry = Registry()\n"
    )
    (folder / "a_good.py").write_text(GOOD.format(package=package))
    (folder / "b_syntax.py").write_text("x = 1\n\ndef broken(:\n    pass\n")
    (folder / "nested" / "__init__.py").write_text("")
    (folder / "nested" / "c_raises.py").write_text("import os\n\nvalue = undefined_name\n")
    yield tmp_path, package
    for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        del sys.modules[name]


def test_every_module_is_imported_and_every_failure_has_file_and_line(
    project: tuple[Path, str],
) -> None:
    root, package = project
    registry = Registry()
    found = load_pipelines([package], root=root, registry=registry)
    folder = root / "src" / package
    assert [(d.location, d.message) for d in found] == [
        (
            f"{folder / 'b_syntax.py'}:3",
            f"cannot import pipelines '{package}.b_syntax': syntax error: invalid syntax",
        ),
        (
            f"{folder / 'nested' / 'c_raises.py'}:3",
            f"cannot import pipelines '{package}.nested.c_raises': NameError: "
            "name 'undefined_name' is not defined",
        ),
    ]
    assert registry.check() == found


def test_import_pipelines_raises_one_error_naming_every_failure(
    project: tuple[Path, str],
) -> None:
    root, package = project
    with pytest.raises(PipelineImportError) as raised:
        import_pipelines([package], root=root, registry=Registry())
    assert len(raised.value.diagnostics) == 2
    rendered = raised.value.render()
    assert "b_syntax.py:3: cannot import pipelines" in rendered
    assert "c_raises.py:3: cannot import pipelines" in rendered


def test_the_good_module_is_loaded_despite_the_failures(project: tuple[Path, str]) -> None:
    root, package = project
    load_pipelines([package], root=root, registry=Registry())
    assert sys.modules[f"{package}.a_good"].registry.names == ["nightly"]


def test_a_missing_module_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="pipeline module 'no_such_pipelines' not found"):
        load_pipelines(["no_such_pipelines"], registry=Registry())
