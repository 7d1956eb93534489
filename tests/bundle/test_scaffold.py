"""dbxdec init's project rendering (bundle/scaffold.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators.bundle.scaffold import (
    ProjectNames,
    init_project,
    render_plan,
    templates_root,
)
from databricks_bundle_decorators.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

EXPECTED_FILES = [
    ".gitignore",
    "README.md",
    "databricks.yml",
    "pyproject.toml",
    "src/sales_etl/__init__.py",
    "src/sales_etl/pipelines/__init__.py",
    "src/sales_etl/pipelines/daily_orders.py",
    "tests/test_daily_orders.py",
]


def test_templates_are_files_in_the_source_tree() -> None:
    root = templates_root()
    assert (root / "project" / "pyproject.toml.tmpl").is_file()
    assert {p.name for p in root.iterdir() if p.is_dir()} == {"project", "serverless", "classic"}


@pytest.mark.parametrize("compute", ["serverless", "classic"])
def test_the_plan_renders_every_placeholder(compute: str) -> None:
    plan = render_plan(ProjectNames.of("sales-etl"), compute, version="9.9.9")  # type: ignore[arg-type]
    assert [p.as_posix() for p in plan] == EXPECTED_FILES
    for path, text in plan.items():
        assert "__PACKAGE__" not in text and "__PROJECT_NAME__" not in text, path
        if path.suffix == ".py":
            ast.parse(text)
    pyproject = tomllib.loads(plan[Path("pyproject.toml")])
    assert pyproject["project"]["name"] == "sales-etl"
    assert pyproject["project"]["dependencies"] == ["databricks-bundle-decorators>=9.9.9"]
    assert pyproject["tool"]["dbxdec"]["pipelines"] == ["sales_etl.pipelines"]
    bundle = yaml.safe_load(plan[Path("databricks.yml")])
    assert set(bundle["targets"]) == {"dev", "prod"}
    assert bundle["python"]["resources"] == ["databricks_bundle_decorators.bundle:load_resources"]
    pipeline = plan[Path("src/sales_etl/pipelines/daily_orders.py")]
    assert ("cluster=SMALL_CLUSTER" in pipeline) is (compute == "classic")


def test_existing_files_are_not_overwritten_without_force(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"already has 1 of the template's files \(README.md\)"):
        init_project(tmp_path, "sales-etl", version="0.1.0")
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "mine\n"
    written = init_project(tmp_path, "sales-etl", version="0.1.0", force=True)
    assert len(written) == len(EXPECTED_FILES)
    assert (tmp_path / "README.md").read_text(encoding="utf-8").startswith("# sales-etl")


@pytest.mark.parametrize("name", ["1abc", "my project", "a/b", "x" * 65, ""])
def test_invalid_project_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match="invalid project name"):
        ProjectNames.of(name)
