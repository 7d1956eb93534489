"""``--detach`` of a ``--downstream`` backfill on Databricks, new or resumed, is refused
in the one line of ``--downstream --detach`` (against the Jobs API emulator)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.control.detach import DOWNSTREAM_REFUSAL, detach_backfill
from databricks_bundle_decorators.launch.launcher import plan_backfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
)
from databricks_bundle_decorators.launch.ledger.ledger_ids import new_backfill_id
from databricks_bundle_decorators.testing import JobsEmulator

from ..launch.downstream_project import own_jobs, write_downstream_project
from ..launch.test_downstream_databricks import deploy, request
from ..launch.trigger_chain import registry
from .clirun import assert_one_error_line


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with own_jobs():
        yield write_downstream_project(tmp_path_factory.mktemp("dsdetach"), "ds_detach_pipelines")


def test_resume_detach_of_a_databricks_downstream_backfill_is_refused_before_the_workspace(
    root: Path, workspace_env: JobsEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    backfill_id = new_backfill_id("ds_a")
    Ledger(
        ledger_dir(root) / f"{backfill_id}.sqlite",
        backfill_id=backfill_id,
        job="ds_a",
        backend=BackendSpec("databricks", job_id=1, host=workspace_env.url),
        options=LaunchOptions(),
        slices=[
            SliceRecord(0, ("2024-01-30",), {}, job="ds_a"),
            SliceRecord(1, ("2024-01-30",), {}, job="ds_b", waits_for=(0,)),
        ],
    ).save()
    before = workspace_env.requests["total"]
    with pytest.raises(SystemExit) as exit_info:
        main(["backfill", "--resume", backfill_id, "--detach", "--project", str(root)])
    _, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert assert_one_error_line(err) == f"Error: {DOWNSTREAM_REFUSAL}"
    assert workspace_env.requests["total"] == before  # refused before the workspace


def test_a_prepared_databricks_downstream_backfill_is_not_detached(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    """The launcher's own check, whichever command prepared it."""
    deploy(emu)
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=tmp_path / "wh",
        client=emu.workspace_client(),
    )  # fmt: skip
    with pytest.raises(UsageError) as refused:
        detach_backfill(prepared, root=tmp_path)
    assert str(refused.value) == DOWNSTREAM_REFUSAL
    assert emu.run_now_bodies() == []  # no controller run, no slice run
