"""dbxdec generate / validate / deploy / init, through the real entry point."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators.bundle import SchemaValidator
from databricks_bundle_decorators.cli.main import main
from tests.bundle.projects import DAILY_PIPELINE, make_project, schema_path, unique_module


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``dbxdec argv`` in-process; return exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    captured = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), captured.out, captured.err


def assert_one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


# -- generate -----------------------------------------------------------------------------------


def test_generate_writes_one_deterministic_file_per_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, DAILY_PIPELINE)
    code, out, _ = run(["generate", "--project", str(tmp_path), "-t", "prod"], capsys)
    assert code == 0
    assert "Wrote 2 job file(s)" in out
    files = sorted((tmp_path / "resources").iterdir())
    assert [f.name for f in files] == [f"{p.job('nightly')}.job.yml", f"{p.job('sales')}.job.yml"]
    first = [f.read_bytes() for f in files]
    document = yaml.safe_load(files[1].read_text(encoding="utf-8"))
    sales = document["resources"]["jobs"][p.job("sales")]
    assert sales["environments"][0]["spec"]["dependencies"] == ["../dist/*.whl"]
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
    assert out.startswith("OK: 2 job(s) valid (definitions, typed load, schema")


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
    assert "problem(s) in 4 job(s)" in assert_one_error_line(err)
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


# -- deploy -----------------------------------------------------------------------------------------


def _stand_in_databricks(bin_dir: Path, record: Path, exit_code: int) -> None:
    bin_dir.mkdir()
    script = bin_dir / "databricks"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(record)!r}, 'w') as f:\n"
        "    json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd()}, f)\n"
        "print('Deploying resources... (stand-in)')\n"
        f"sys.exit({exit_code})\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_deploy_validates_then_runs_the_databricks_cli(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(project, DAILY_PIPELINE)
    record = tmp_path / "argv.json"
    _stand_in_databricks(tmp_path / "bin", record, exit_code=3)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run(
        [
            "deploy",
            "--project",
            str(project),
            "-t",
            "prod",
            "--profile",
            "ws",
            "--",
            "--force-lock",
        ],
        capfd,
    )
    assert code == 3  # the Databricks CLI's exit code, passed through
    assert "'databricks bundle deploy' failed with exit code 3" in assert_one_error_line(err)
    called = json.loads(record.read_text(encoding="utf-8"))
    assert called["argv"] == [
        "bundle",
        "deploy",
        "--target",
        "prod",
        "--profile",
        "ws",
        "--force-lock",
    ]
    assert Path(called["cwd"]) == project.resolve()
    assert "Deploying resources... (stand-in)" in out
    assert not (project / "resources").exists()  # databricks.yml loads the jobs itself


def test_deploy_generates_yaml_when_the_bundle_includes_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    p = make_project(
        project, DAILY_PIPELINE, bundle="bundle:\n  name: {name}\ninclude:\n  - resources/*.yml\n"
    )
    record = tmp_path / "argv.json"
    _stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, _ = run(["deploy", "--project", str(project)], capsys)
    assert code == 0
    assert json.loads(record.read_text(encoding="utf-8"))["argv"] == ["bundle", "deploy"]
    assert sorted(p.name for p in (project / "resources").iterdir()) == [
        f"{p.job('nightly')}.job.yml",
        f"{p.job('sales')}.job.yml",
    ]


def test_deploy_stops_before_the_cli_when_validation_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    make_project(
        project,
        DAILY_PIPELINE
        + "\n@job(name='JOBPREFIX_typo', max_concurent_runs=2)\ndef typo():\n    @task\n    def t(): ...\n    t()\n",
    )
    record = tmp_path / "argv.json"
    _stand_in_databricks(tmp_path / "bin", record, exit_code=0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run(["deploy", "--project", str(project)], capsys)
    assert code == 1
    assert "nothing was deployed" in assert_one_error_line(err)
    assert not record.exists()


def test_deploy_without_the_databricks_cli_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, err = run(["deploy", "--project", str(tmp_path)], capsys)
    assert code == 2
    line = assert_one_error_line(err)
    assert "Databricks CLI" in line and "install" in line and "https://docs.databricks.com" in line


# -- init -------------------------------------------------------------------------------------------


def test_init_creates_a_project_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = unique_module("init")
    destination = tmp_path / name
    code, out, _ = run(["init", name, "--classic", "--dir", str(destination)], capsys)
    assert code == 0
    assert f"Created {name} (classic)" in out
    assert (destination / "src" / name / "pipelines" / "daily_orders.py").is_file()

    code, out, err = run(
        ["validate", "--project", str(destination), "--schema", str(schema_path())], capsys
    )
    assert (code, err) == (0, "")
    assert out.startswith("OK: 1 job(s) valid")

    code, _, err = run(["init", name, "--dir", str(destination)], capsys)
    assert code == 2
    assert "use --force" in assert_one_error_line(err)


@pytest.mark.parametrize("command", ["generate", "validate", "deploy", "init"])
def test_help_explains_each_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0
    assert f"Usage: dbxdec {command}" in out
    assert len(out.splitlines()) > 8


@pytest.mark.slow
def test_an_initialised_project_installs_and_passes_its_own_tests(tmp_path: Path) -> None:
    """The Must-show path: dbxdec init, pip install -e, pytest, validate, generate.

    Kept fast: the throw-away venv has no pip of its own (this interpreter's pip installs
    into it with --python) and sees this environment's packages through a .pth file, so
    only the new project itself is installed (--no-deps). The build keeps pip's build
    isolation: the template's build requirements come from pip's cache or index.
    """
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "dbxdec_parent_env.pth").write_text(
        f"import site; site.addsitedir({parent!r})\n", encoding="utf-8"
    )
    dbxdec = [str(python), "-c", "from databricks_bundle_decorators.cli.main import main; main()"]
    project = tmp_path / "shop-etl"

    def call(*args: str, cwd: Path = project) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=cwd, capture_output=True, text=True, timeout=300, check=False
        )

    created = call(*dbxdec, "init", "shop-etl", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    installed = call(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--quiet",
        "--no-deps",
        "-e",
        ".",
    )
    assert installed.returncode == 0, installed.stderr
    imported = call(
        str(python),
        "-c",
        "import shop_etl.pipelines.daily_orders as m; print(m.__file__)",
        cwd=tmp_path,
    )
    assert imported.stdout.strip() == str(
        project / "src" / "shop_etl" / "pipelines" / "daily_orders.py"
    )
    tests = call(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "7 passed" in tests.stdout, tests.stdout
    validated = call(*dbxdec, "validate", "--schema", str(schema_path()))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    generated = call(*dbxdec, "generate")
    assert generated.returncode == 0, generated.stderr
    document = yaml.safe_load(
        (project / "resources" / "daily_orders.job.yml").read_text(encoding="utf-8")
    )
    job = document["resources"]["jobs"]["daily_orders"]
    assert SchemaValidator(schema_path()).problems("daily_orders", job) == []
    assert job["tasks"][0]["python_wheel_task"]["package_name"] == "shop-etl"


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
    assert out.startswith("OK: 2 job(s) valid")


def test_pipelines_without_jobs_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path, "X = 1\n")
    code, _, err = run(["generate", "--project", str(tmp_path)], capsys)
    assert code == 2
    assert f"no @job definitions found in {p.module}" in assert_one_error_line(err)
