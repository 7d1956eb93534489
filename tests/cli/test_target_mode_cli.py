"""``dbxdec validate`` applies the Databricks CLI's target-mode rules offline (assuming a
human deployer): a production target needs its own ``workspace.root_path``; a job may
not pass 25 tags once the target's presets and development mode's ``dev`` tag are added."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.bundle_file import read_bundle_file
from tests.bundle.projects import DAILY_PIPELINE, make_project, schema_path
from tests.cli.clirun import assert_one_error_line, run

# The prod target of the project template before it set its own root_path.
TODAYS_PROD_TARGET = "  prod:\n    mode: production\n    variables:\n      catalog: main\n"


def _init(tmp_path: Path) -> Path:
    """A project whose databricks.yml is the project template's (as dbxdec init writes it)."""
    project = tmp_path / "project"
    make_project(project, DAILY_PIPELINE, bundle=None)
    template = resources.files("databricks_bundle_decorators") / "templates/project"
    text = (template / "databricks.yml.tmpl").read_text(encoding="utf-8")
    for placeholder, value in (
        ("__PROJECT_NAME__", "m"),
        ("__PACKAGE__", "m"),
        ("__DBXDEC_WHEEL__", "w"),
    ):
        text = text.replace(placeholder, value)
    (project / "databricks.yml").write_text(text, encoding="utf-8")
    return project


def _validate(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code, out, err = run(
        ["validate", "--project", str(project), "--schema", str(schema_path()), *args], capsys
    )
    return code, out + err


def _prod_target(project: Path, text: str) -> None:
    bundle = project / "databricks.yml"
    current = bundle.read_text(encoding="utf-8")
    start = current.index("  prod:\n")
    bundle.write_text(current[:start] + text, encoding="utf-8")


def test_prod_fails_on_todays_template_and_passes_on_the_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _init(tmp_path)
    code, out = _validate(project, capsys, "-t", "prod")
    assert (code, out.splitlines()[0]) == (
        0,
        "OK: 2 jobs valid (definitions, typed load, schema)",
    )
    assert not re.search(r"__[A-Z_]+__", (project / "databricks.yml").read_text(encoding="utf-8"))
    assert read_bundle_file(project / "databricks.yml").targets == ("dev", "prod")
    assert "root_path: /Workspace/Shared/.bundle/${bundle.name}/${bundle.target}" in (
        project / "databricks.yml"
    ).read_text(encoding="utf-8")

    _prod_target(project, TODAYS_PROD_TARGET)
    code, out = _validate(project, capsys, "-t", "prod")
    assert code == 1
    problems = [line for line in out.splitlines() if "root_path" in line]
    assert problems == [
        "target 'prod' (mode: production): set targets.prod.workspace.root_path (e.g. "
        "/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}) so only one copy is "
        "deployed; the Databricks CLI refuses a production target without it (a top-level "
        "workspace.root_path does not count)"
    ]
    assert _validate(project, capsys, "-t", "dev")[0] == 0  # development mode is not concerned


def test_a_top_level_root_path_does_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _init(tmp_path)
    _prod_target(project, TODAYS_PROD_TARGET)
    bundle = project / "databricks.yml"
    text = bundle.read_text(encoding="utf-8")
    bundle.write_text(text + "\nworkspace:\n  root_path: /Workspace/Shared/x\n", encoding="utf-8")
    assert _validate(project, capsys, "-t", "prod")[0] == 1


@pytest.mark.parametrize(
    ("addition", "args"),
    [
        ("", ("--as-service-principal",)),
        ("\nrun_as:\n  service_principal_name: 6f2c1b9e-1f0a-4c3e-9d7b-2a5e8c4f1b3d\n", ()),
        ("    run_as:\n      user_name: ops@example.com\n", ()),
    ],
    ids=["service-principal", "bundle-run-as", "target-run-as"],
)
def test_run_as_or_a_service_principal_makes_it_a_recommendation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], addition: str, args: tuple[str, ...]
) -> None:
    project = _init(tmp_path)
    _prod_target(project, TODAYS_PROD_TARGET + addition)
    code, out = _validate(project, capsys, "-t", "prod", *args)
    assert code == 0, out


def test_a_development_pipeline_in_production_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _init(tmp_path)
    bundle = project / "databricks.yml"
    text = bundle.read_text(encoding="utf-8")
    pipelines = "\nresources:\n  pipelines:\n    dlt:\n      name: dlt\n      development: true\n"
    bundle.write_text(text + pipelines, encoding="utf-8")
    code, out = _validate(project, capsys, "-t", "prod")
    assert code == 1
    assert "pipeline 'dlt' has development: true, which production mode refuses" in out


def test_the_repository_bundle_sets_a_shared_prod_root_path() -> None:
    import yaml

    root = Path(__file__).resolve().parents[2]
    prod = yaml.safe_load((root / "databricks.yml").read_text(encoding="utf-8"))["targets"]["prod"]
    assert prod["workspace"]["root_path"].startswith("/Workspace/Shared/")
    assert "current_user" not in json.dumps(prod)


# -- 25 tags ---------------------------------------------------------------------------


TAGGED = """\
from databricks_bundle_decorators import job, task

@job(name="JOBPREFIX_tagged", tags={TAGS})
def tagged():
    @task
    def work():
        ...

    work()
"""

BUNDLE = """\
bundle:
  name: {name}
targets:
  dev:
    mode: development
    default: true
  plain: {{}}
  tagged:
    presets:
      tags:
        cost_centre: "42"
"""


def _tagged_project(root: Path, count: int) -> Path:
    tags = {f"t{i:02d}": "x" for i in range(count)}
    make_project(root, TAGGED.replace("{TAGS}", repr(tags)), bundle=BUNDLE)
    return root


def test_a_25_tag_job_in_development_mode_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _tagged_project(tmp_path / "p", 25)
    code, out = _validate(project, capsys, "-t", "dev")
    assert code == 1
    (line,) = [line for line in out.splitlines() if "tags" in line]
    assert re.fullmatch(
        r"job 'p\d+_tagged': 26 tags once target 'dev' adds dev \(development mode\); a "
        r"Databricks job may have at most 25: remove tags",
        line,
    )
    assert _validate(project, capsys, "-t", "plain")[0] == 0  # no mode: 25 is the limit
    assert _validate(project, capsys, "-t", "tagged")[0] == 1  # a preset tag is the 26th

    code, out, err = run(["generate", "--project", str(project), "-t", "dev"], capsys)
    assert code == 1
    assert "26 tags once target 'dev' adds dev" in assert_one_error_line(err)
    assert not (project / "resources").exists()


def test_24_tags_pass_in_development_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _tagged_project(tmp_path / "p", 24)
    code, out = _validate(project, capsys, "-t", "dev")
    assert code == 0, out
