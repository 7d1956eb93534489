"""dbxdec init and dbxdec wheel, through the real entry point; the slow test installs an
initialised project in a fresh venv from the wheel init copied into it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.bundle import SchemaValidator
from databricks_bundle_decorators.bundle.framework_wheel import wheel_version
from tests.bundle.projects import schema_path, unique_module
from tests.cli.clirun import assert_one_error_line, run

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
    assert (destination / "wheels" / f"dbxdec-{__version__}-py3-none-any.whl").is_file()
    assert f"pip install wheels/dbxdec-{__version__}-py3-none-any.whl" in out
    for prose in ("README.md", "databricks.yml"):  # placeholders render in prose too
        text = (destination / prose).read_text(encoding="utf-8")
        assert f"src/{name}/pipelines" in text, prose
        assert not re.search(r"__(package|PACKAGE|PROJECT_NAME|DBXDEC_\w+)__", text), prose

    code, out, err = run(
        ["validate", "--project", str(destination), "--schema", str(schema_path())], capsys
    )
    assert (code, err) == (0, "")
    assert out.startswith("OK: 1 job valid")

    code, _, err = run(["init", name, "--dir", str(destination)], capsys)
    assert code == 2
    assert "use --force" in assert_one_error_line(err)


def test_wheel_writes_the_running_dbxdec_into_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    code, out, err = run(["wheel"], capsys)
    assert (code, err) == (0, "")
    written = tmp_path / "wheels" / f"dbxdec-{__version__}-py3-none-any.whl"
    assert out == f"Wrote {os.path.relpath(written)}\n"
    assert wheel_version(written) == __version__


def _project_texts(project: Path) -> dict[Path, str]:
    """Every text file of ``project`` (the wheel and caches aside), by path."""
    skipped = {".whl", ".pyc"}
    return {
        path: path.read_text(encoding="utf-8")
        for path in sorted(project.rglob("*"))
        if path.is_file()
        and path.suffix not in skipped
        and ".pytest_cache" not in path.parts
        and "egg-info" not in str(path)
    }


@dataclass
class Initialised:
    """A project ``dbxdec init`` made, installed (dbxdec from the wheel init copied, then
    ``pip install -e ".[dev]"``) in a venv of its own; ``call`` runs a command in it."""

    project: Path
    python: Path
    dbxdec: list[str]

    def call(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=cwd or self.project, capture_output=True, text=True, timeout=300
        )


def _initialise_and_install(tmp_path: Path) -> Initialised:
    """The README's path up to the install, checking where dbxdec comes from.

    Kept fast: the throw-away venv has no pip of its own (this interpreter's pip installs
    into it with --python) and sees this environment's packages through a .pth file, so
    the dependencies (PySpark included) are already satisfied and only dbxdec (from
    wheels/) and the project itself are installed. The venv's own site-packages come
    first on sys.path, so its dbxdec is the wheel's, not this checkout. The build keeps
    pip's build isolation: the template's build requirements come from pip's cache or
    index.
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
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    made = Initialised(tmp_path / "shop-etl", python, dbxdec)

    created = made.call(*dbxdec, "init", "shop-etl", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    project = made.project
    wheel = f"wheels/dbxdec-{__version__}-py3-none-any.whl"
    assert [p.relative_to(project).as_posix() for p in project.glob("wheels/*")] == [wheel]
    for path, text in _project_texts(project).items():
        assert "databricks-bundle-decorators" not in text, path
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert f"pip install {wheel}\n" in readme

    installed = made.call(*pip, "--no-deps", wheel)
    assert installed.returncode == 0, installed.stderr
    installed = made.call(*pip, "-e", ".[dev]")
    assert installed.returncode == 0, installed.stderr
    origin = made.call(
        str(python),
        "-c",
        "import json, databricks_bundle_decorators as d, importlib.metadata as m; "
        "print(d.__file__); print(m.distribution('dbxdec').read_text('direct_url.json'))",
        cwd=tmp_path,
    )
    module_file, direct_url = origin.stdout.strip().splitlines()
    assert Path(module_file).is_relative_to(purelib), module_file
    assert json.loads(direct_url)["url"] == (project / wheel).as_uri()
    imported = made.call(
        str(python),
        "-c",
        "import shop_etl.pipelines.daily_orders as m; print(m.__file__)",
        cwd=tmp_path,
    )
    assert imported.stdout.strip() == str(
        project / "src" / "shop_etl" / "pipelines" / "daily_orders.py"
    )
    return made


@pytest.mark.slow
def test_an_initialised_project_installs_validates_and_generates(tmp_path: Path) -> None:
    """The Must-show path without a JVM: dbxdec init, install dbxdec from the wheel init
    copied, pip install -e ".[dev]", validate, generate. The project's own tests run on the
    getting-started page (tests/test_getting_started.py: "3 passed"); the soak scenario
    below runs them here too, with the README's local backfill."""
    made = _initialise_and_install(tmp_path)
    project, dbxdec = made.project, made.dbxdec
    validated = made.call(*dbxdec, "validate", "--schema", str(schema_path()))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    generated = made.call(*dbxdec, "generate")
    assert generated.returncode == 0, generated.stderr
    document = yaml.safe_load(
        (project / "resources" / "daily_orders.job.yml").read_text(encoding="utf-8")
    )
    job = document["resources"]["jobs"]["daily_orders"]
    assert SchemaValidator(schema_path()).problems("daily_orders", job) == []
    assert job["tasks"][0]["python_wheel_task"]["package_name"] == "shop-etl"
    wheel = f"wheels/dbxdec-{__version__}-py3-none-any.whl"
    assert job["environments"][0]["spec"]["dependencies"] == [f"../{wheel}", "../dist/*.whl"]
    for path, text in _project_texts(project).items():
        assert "databricks-bundle-decorators" not in text, path


@pytest.mark.soak  # three JVMs (the project's pytest, two backfills): ~100 s of make test
@pytest.mark.spark
def test_an_initialised_project_passes_its_own_tests_and_backfills_locally(
    tmp_path: Path, spark: Any
) -> None:
    made = _initialise_and_install(tmp_path)
    tests = made.call(str(made.python), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout, tests.stdout
    _backfill_three_days_locally(made.project, made.call, made.dbxdec, spark)


def _backfill_three_days_locally(project: Path, call: Any, dbxdec: list[str], spark: Any) -> None:
    """The README's local backfill, twice: a Delta table with one partition per day, and
    one commit per run added by the re-run."""
    table = project / ".dbxdec" / "warehouse" / "main" / "shop_etl" / "daily_orders"
    command = [*dbxdec, "backfill", "daily_orders", "--start", "2024-01-01", "--end", "2024-01-03"]

    def state() -> tuple[dict[str, tuple[int, float]], int]:
        frame = spark.read.format("delta").load(str(table))
        rows = {str(r.order_date): (r.orders, r.total_price) for r in frame.collect()}
        return rows, len(spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect())

    first = call(*command, "--local")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (table / "_delta_log").is_dir()
    rows, commits = state()
    assert sorted(rows) == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert commits == 3  # one run per day, one commit per run
    again = call(*command, "--local")
    assert again.returncode == 0, again.stdout + again.stderr
    assert state() == (rows, 6)
    status = call(*dbxdec, "status", "daily_orders", "--local")
    assert status.returncode == 0, status.stdout + status.stderr


def test_init_refuses_serverless_and_classic_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    destination = tmp_path / "both"
    code, out, err = run(
        ["init", "both", "--serverless", "--classic", "--dir", str(destination)], capsys
    )
    assert code == 2 and out == ""
    assert err == "Error: --serverless and --classic exclude each other: pass one of them\n"
    assert not destination.exists()
