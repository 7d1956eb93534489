"""dbxdec generate / validate and the commands' help, through the real entry point
(deploy and init: test_deploy_command.py, test_init_command.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.bundle import SchemaValidator
from tests.bundle.projects import DAILY_PIPELINE, make_project, schema_path, unique_module
from tests.cli.clirun import assert_one_error_line, run

# -- generate -----------------------------------------------------------------------------------


def test_generate_writes_one_deterministic_file_per_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, DAILY_PIPELINE)
    code, out, _ = run(["generate", "--project", str(tmp_path), "-t", "prod"], capsys)
    assert code == 0
    assert "Wrote 3 job files" in out  # and the controller of detached backfills (issue 28)
    files = sorted((tmp_path / "resources").iterdir())
    assert [f.name for f in files] == [
        "dbxdec_controller.job.yml",
        f"{p.job('nightly')}.job.yml",
        f"{p.job('sales')}.job.yml",
    ]
    first = [f.read_bytes() for f in files]
    document = yaml.safe_load(files[2].read_text(encoding="utf-8"))
    sales = document["resources"]["jobs"][p.job("sales")]
    assert sales["environments"][0]["spec"]["dependencies"] == [
        f"../wheels/dbxdec-{__version__}-py3-none-any.whl",
        "../dist/*.whl",
    ]
    assert "pause_status" not in sales["schedule"]

    code, _, _ = run(["generate", "--project", str(tmp_path), "-t", "prod"], capsys)
    assert code == 0
    assert [f.read_bytes() for f in files] == first
    validator = SchemaValidator(schema_path())
    for path in files:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        [(name, job)] = document["resources"]["jobs"].items()
        assert validator.problems(name, job) == []


def test_generate_applies_target_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(
        tmp_path,
        DAILY_PIPELINE,
        tool='params = { catalog = "${var.catalog}" }\n[tool.dbxdec.targets.dev]\npause_schedules = true\n',
    )
    code, _, _ = run(
        ["generate", "--project", str(tmp_path), "--out", str(tmp_path / "gen")], capsys
    )
    assert code == 0
    path = tmp_path / "gen" / f"{p.job('sales')}.job.yml"
    job = yaml.safe_load(path.read_text(encoding="utf-8"))["resources"]["jobs"][p.job("sales")]
    assert job["schedule"]["pause_status"] == "PAUSED"  # dev is the default target
    assert {"name": "catalog", "default": "dev"} in job["parameters"]


def test_generate_writes_nothing_when_a_job_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(
        tmp_path,
        DAILY_PIPELINE
        + "\n@job(name='JOBPREFIX_typo', max_concurent_runs=2)\ndef typo():\n    @task\n    def t(): ...\n    t()\n",
    )
    code, _, err = run(["generate", "--project", str(tmp_path)], capsys)
    assert code == 1
    line = assert_one_error_line(err)
    assert "field 'max_concurent_runs': unknown setting" in line
    assert not (tmp_path / "resources").exists()


# -- validate ------------------------------------------------------------------------------------


def test_validate_passes_a_good_project_against_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    code, out, err = run(
        ["validate", "--project", str(tmp_path), "--schema", str(schema_path())], capsys
    )
    assert (code, err) == (0, "")
    assert out.startswith("OK: 2 jobs valid (definitions, typed load, schema")


def test_validate_lists_every_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = DAILY_PIPELINE + textwrap.dedent(
        """
        @job(name="JOBPREFIX_typo", max_concurent_runs=2, params={"catalog": "${var.warehouse}"})
        def typo():
            @task(timeout_second=5)
            def t(): ...
            t()

        @job(name="JOBPREFIX_cyclic")
        def cyclic():
            @task(depends_on=["b"])
            def a(): ...
            @task(depends_on=[a])
            def b(): ...
            a()
            b()
        """
    )
    p = make_project(tmp_path, source)
    code, out, err = run(
        ["validate", "--project", str(tmp_path), "--schema", str(schema_path())], capsys
    )
    assert code == 1
    assert "problems in 4 jobs" in assert_one_error_line(err)
    typo, cyclic = p.job("typo"), p.job("cyclic")
    assert f"job '{typo}', field 'max_concurent_runs': unknown setting" in out
    assert f"job '{typo}', task 't', field 'timeout_second': unknown setting" in out
    assert (
        f"job '{typo}', task 't': Additional properties are not allowed ('timeout_second' was unexpected)"
        in out
    )
    assert (
        f"job '{typo}', field 'parameters[0].default': references undeclared bundle variable 'warehouse'"
        in out
    )
    assert f"job '{cyclic}', task 'a': dependency cycle: a -> b -> a" in out


# -- bad input -------------------------------------------------------------------------------------


def test_an_invalid_cron_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(
        tmp_path,
        """\
        from databricks_bundle_decorators import job, task

        @job(name="JOBPREFIX_nightly", schedule="0 0 25 * * ?")
        def nightly():
            @task
            def t(): ...
            t()
        """,
    )
    code, _, err = run(["validate", "--project", str(tmp_path)], capsys)
    assert code == 1
    line = assert_one_error_line(err)
    assert f"cannot import pipelines '{p.module}'" in line
    assert f"job '{p.job('nightly')}'" in line and "hour" in line


def test_a_missing_pipelines_setting_says_how_to_configure_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    code, _, err = run(["generate", "--project", str(tmp_path)], capsys)
    assert code == 2
    assert "no pipelines configured" in assert_one_error_line(err)


def test_an_unknown_target_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    code, _, err = run(["generate", "--project", str(tmp_path), "-t", "staging"], capsys)
    assert code == 2
    assert "unknown target 'staging' in databricks.yml" in assert_one_error_line(err)
    assert not (tmp_path / "resources").exists()


def test_a_syntax_error_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(
        tmp_path, "from databricks_bundle_decorators import job\n\n\ndef broken(:\n    pass\n"
    )
    code, _, err = run(["validate", "--project", str(tmp_path)], capsys)
    assert code == 1
    line = assert_one_error_line(err)
    assert f"{tmp_path / p.module}.py:4" in line


@pytest.mark.parametrize("command", ["generate", "validate", "deploy", "init", "wheel"])
def test_help_explains_each_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0
    assert f"Usage: dbxdec {command}" in out
    assert len(out.splitlines()) > 8


def test_a_pipelines_package_is_imported_with_its_submodules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = unique_module("pkg")
    make_project(tmp_path, "", module=package)
    (tmp_path / f"{package}.py").unlink()
    for sub, job in (("", None), ("a", "first"), ("nested", None), ("nested.b", "second")):
        folder = tmp_path / package / Path(*sub.split(".")) if sub else tmp_path / package
        if job is None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "__init__.py").write_text("", encoding="utf-8")
        else:
            folder.with_suffix(".py").write_text(
                "from databricks_bundle_decorators import job, task\n\n"
                f"@job(name='{package}_{job}')\ndef j():\n    @task\n    def t(): ...\n    t()\n",
                encoding="utf-8",
            )
    code, out, _ = run(["validate", "--project", str(tmp_path)], capsys)
    assert code == 0
    assert out.startswith("OK: 2 jobs valid")


def test_pipelines_without_jobs_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, "X = 1\n")
    code, _, err = run(["generate", "--project", str(tmp_path)], capsys)
    assert code == 2
    assert f"no @job definitions found in {p.module}" in assert_one_error_line(err)
