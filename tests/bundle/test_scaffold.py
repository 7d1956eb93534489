"""dbxdec init's project rendering (bundle/workflows.py)."""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators.bundle.workflows import (
    DELTA_SPARK_PIN,
    PYSPARK_PIN,
    ProjectNames,
    init_project,
    render_plan,
    templates_root,
)
from databricks_bundle_decorators.errors import UsageError

from .projects import REPO_ROOT, fake_framework_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

EXPECTED_FILES = [
    ".gitignore",
    "README.md",
    "databricks.yml",
    "pyproject.toml",
    "seeds/orders.csv",
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
        assert re.search(r"__[A-Z][A-Z_]*__|__package__", text) is None, path
        assert "databricks-bundle-decorators" not in text, path
        if path.suffix == ".py":
            ast.parse(text)
    pyproject = tomllib.loads(plan[Path("pyproject.toml")])
    assert pyproject["project"]["name"] == "sales-etl"
    assert pyproject["project"]["dependencies"] == ["dbxdec==9.9.9"]
    assert pyproject["project"]["optional-dependencies"]["dev"] == [
        "pytest>=8",
        "pyspark==4.0.1",
        "delta-spark==4.0.1",
    ]
    readme = plan[Path("README.md")]
    assert "pip install wheels/dbxdec-9.9.9-py3-none-any.whl\n" in readme
    assert "src/sales_etl/pipelines/" in readme
    assert "src/sales_etl/pipelines" in plan[Path("databricks.yml")]
    assert pyproject["tool"]["dbxdec"]["pipelines"] == ["sales_etl.pipelines"]
    bundle = yaml.safe_load(plan[Path("databricks.yml")])
    assert set(bundle["targets"]) == {"dev", "prod"}
    assert bundle["python"]["resources"] == ["databricks_bundle_decorators.bundle:load_resources"]
    pipeline = plan[Path("src/sales_etl/pipelines/daily_orders.py")]
    assert ("cluster=SMALL_CLUSTER" in pipeline) is (compute == "classic")


def test_the_spark_pins_are_dbxdecs_own(tmp_path: Path) -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    assert extras["spark"] == [PYSPARK_PIN, DELTA_SPARK_PIN]
    # dev installs pyspark with its `connect` extra (the Spark Connect lane): the same pin
    dev_pins = {re.sub(r"\[[a-z,]+\]", "", requirement) for requirement in extras["dev"]}
    assert {PYSPARK_PIN, DELTA_SPARK_PIN} <= dev_pins


def test_the_project_gets_the_framework_wheel(tmp_path: Path) -> None:
    built: list[Path] = []

    def wheel(folder: Path) -> Path:
        built.append(fake_framework_wheel(folder, version="0.1.0"))
        return built[-1]

    written = init_project(tmp_path / "p", "sales-etl", version="0.1.0", framework_wheel=wheel)
    copied = tmp_path / "p" / "wheels" / "dbxdec-0.1.0-py3-none-any.whl"
    assert written[-1] == copied and copied.name == built[0].name
    assert zipfile.ZipFile(copied).namelist() == ["dbxdec-0.1.0.dist-info/METADATA"]
    assert len(written) == len(EXPECTED_FILES) + 1


def test_a_wheel_of_another_version_writes_nothing(tmp_path: Path) -> None:
    def wheel(folder: Path) -> Path:
        return fake_framework_wheel(folder, version="0.0.9")

    with pytest.raises(
        UsageError, match=r"is not dbxdec 0\.1\.0's wheel \(it holds dbxdec 0\.0\.9\)"
    ):
        init_project(tmp_path / "p", "sales-etl", version="0.1.0", framework_wheel=wheel)
    assert not (tmp_path / "p").exists()


def test_existing_files_are_not_overwritten_without_force(tmp_path: Path) -> None:
    def wheel(folder: Path) -> Path:
        return fake_framework_wheel(folder, version="0.1.0")

    project = tmp_path / "p"
    project.mkdir()
    (project / "README.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"already has 1 of the template's files \(README.md\)"):
        init_project(project, "sales-etl", version="0.1.0", framework_wheel=wheel)
    assert [p.name for p in project.iterdir()] == ["README.md"]
    assert (project / "README.md").read_text(encoding="utf-8") == "mine\n"
    written = init_project(project, "sales-etl", version="0.1.0", framework_wheel=wheel, force=True)
    assert len(written) == len(EXPECTED_FILES) + 1
    assert (project / "README.md").read_text(encoding="utf-8").startswith("# sales-etl")


@pytest.mark.parametrize("name", ["1abc", "my project", "a/b", "x" * 65, ""])
def test_invalid_project_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match="invalid project name"):
        ProjectNames.of(name)
