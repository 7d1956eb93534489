"""A workspace for the app's tests: the emulator with jobs ``nightly`` and ``sales`` and
the controller job deployed (controller runs are real ``dbxdec-controller`` processes), a
project whose pipelines define them, and the app serving it.

``sales`` writes a Delta table and is deployed as ``dbxdec deploy`` deploys today (with
the ``dbxdec_order`` parameter), so undoing its backfill starts an undo run; ``nightly``
writes nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.backfill.wire import BACKFILL_PARAM_DEFAULTS
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.testing import JobsEmulator
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of
from tests.launch.conftest import BACKFILL_PARAMS, PIPELINES, write_project
from tests.launch.controller_fixtures import controller_job

from .appserver import Browserless, serving

TOKEN = "dapi-app-owner-4c1e8b"
MODULE = "app_test_pipelines"
SALES = """

from databricks_bundle_decorators.io_managers import SparkTableIoManager


@task(io_manager=SparkTableIoManager("main.shop.sales", partition_column="day"))
def daily_sales() -> None:
    pass


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"))
def sales() -> None:
    daily_sales()
"""


@dataclass
class AppWorkspace:
    emu: JobsEmulator
    job_id: int
    controller_job: int
    root: Path
    settings: AppSettings
    url: str = ""
    sales_id: int = 0

    def client(self, **headers: str) -> Browserless:
        return Browserless(self.url, dict(headers))

    @contextmanager
    def another_app(self, **changes: object) -> Iterator[Browserless]:
        """A second app on the same project and workspace, with ``changes`` to its
        settings (e.g. ``user_authorization=True``); a client of it."""
        with serving(replace(self.settings, **changes)) as url:  # type: ignore[arg-type]
            yield Browserless(url)


@pytest.fixture
def app_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppWorkspace]:
    """The emulator as the environment's workspace, a project, and the app (local mode,
    the workspace read with the environment's credentials)."""
    with JobsEmulator(token=TOKEN) as emu:
        emu.default_duration = 0.2
        for name in list(os.environ):
            if name.startswith("DATABRICKS_"):
                monkeypatch.delenv(name)
        monkeypatch.setenv("DATABRICKS_HOST", emu.url)
        monkeypatch.setenv("DATABRICKS_TOKEN", TOKEN)
        monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
        job_id = emu.create_job(
            "nightly", parameters={**BACKFILL_PARAMS, "source": "x"}, max_concurrent_runs=10
        )
        sales_id = emu.create_job(
            "sales", parameters=BACKFILL_PARAM_DEFAULTS, max_concurrent_runs=10
        )
        ctl = controller_job(emu)
        processes_of(emu).extra_env = {"DBXDEC_CLAIMS_DIR": "/Shared/dbxdec/claims"}
        root = write_project(tmp_path / "project", MODULE)
        (root / f"{MODULE}.py").write_text(PIPELINES + SALES)
        settings = AppSettings(root=root, connection=Connection(host=emu.url), live_seconds=0.3)
        with serving(settings) as url:
            yield AppWorkspace(emu, job_id, ctl, root, settings, url, sales_id)
