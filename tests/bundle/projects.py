"""Throw-away dbxdec projects for tests: pyproject, databricks.yml and a pipeline module.

Each project gets a pipeline module with a unique name, because Python caches imported
modules for the whole test session, and ``JOBPREFIX_`` in its source becomes a unique job
name prefix, because the decorators register into the default registry, where job names
are unique across every project imported in this process.
"""

from __future__ import annotations

import itertools
import json
import os
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.bundle.framework_wheel import framework_wheel_name

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = Path(
    os.environ.get("DBXDEC_TEST_BUNDLE_SCHEMA")  # a checkout without ../shared beside it
    or REPO_ROOT.parent / "shared" / "schemas" / "bundle_jsonschema.json"
)
_counter = itertools.count()

BUNDLE_YML = """\
bundle:
  name: {name}

python:
  resources:
    - "databricks_bundle_decorators.bundle:load_resources"

variables:
  catalog:
    default: main

targets:
  dev:
    default: true
    mode: development
    variables:
      catalog: dev
  prod:
    mode: production
"""


def schema_path() -> Path:
    """The official bundle schema, or skip the test with the reason."""
    if not SCHEMA_PATH.is_file():
        pytest.skip(f"bundle JSON schema not found at {SCHEMA_PATH} (no ../shared beside the repo)")
    return SCHEMA_PATH


def unique_module(prefix: str = "pipes") -> str:
    return f"dbxdec_test_{prefix}_{next(_counter)}_{id(_counter)}"


@dataclass(frozen=True)
class TestProject:
    """A project written by :func:`make_project`."""

    module: str
    prefix: str

    def job(self, base: str) -> str:
        """The registered name of job ``JOBPREFIX_<base>``."""
        return f"{self.prefix}{base}"


def make_project(
    root: Path,
    source: str,
    *,
    module: str | None = None,
    bundle: str | None = BUNDLE_YML,
    tool: str = "",
    distribution: str = "test-project",
) -> TestProject:
    """Write a project into ``root``."""
    module = module or unique_module()
    prefix = f"p{next(_counter)}_"
    root.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(source).replace("JOBPREFIX_", prefix)
    (root / f"{module}.py").write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{distribution}"\nversion = "0.1"\n\n'
        f"[tool.dbxdec]\npipelines = [{json.dumps(module)}]\n{textwrap.dedent(tool)}",
        encoding="utf-8",
    )
    if bundle is not None:
        (root / "databricks.yml").write_text(bundle.format(name=distribution), encoding="utf-8")
    return TestProject(module, prefix)


DAILY_PIPELINE = """\
from databricks_bundle_decorators import DailyBackfill, RetryPolicy, job, job_cluster, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

@job(
    name="JOBPREFIX_sales",
    params={"source": "raw.sales", "catalog": "main"},
    backfill=DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1),
    schedule="0 0 6 * * ?",
    tags={"team": "data"},
)
def sales():
    \"\"\"Daily sales.\"\"\"

    @task(
        io_manager=SparkTableIoManager("main.sales.raw", partition_column="day"),
        retries=RetryPolicy(max_retries=3, min_retry_interval_millis=1000),
        timeout_seconds=900,
    )
    def extract():
        \"\"\"Read the day's sales.\"\"\"

    @task
    def report(rows):
        ...

    report(extract())


@job(
    name="JOBPREFIX_nightly",
    cluster=job_cluster("small", spark_version="16.4.x-scala2.12", num_workers=1),
)
def nightly():
    @task
    def cleanup():
        ...

    cleanup()
"""


def fake_framework_wheel(folder: Path, version: str = __version__) -> Path:
    """A stand-in dbxdec wheel (only its metadata) named as the real one, in ``folder``.

    Enough for what reads the version (init, deploy); the real wheel is built once per
    session by the ``framework_wheel`` fixture.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / framework_wheel_name(version)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"dbxdec-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.4\nName: dbxdec\nVersion: {version}\n",
        )
    return path
