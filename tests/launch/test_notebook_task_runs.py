"""A job with a task-value task (a notebook task) that has a check, run for real on the
Jobs API emulator (:meth:`JobsEmulator.execute_tasks`: the generated notebook with a
``dbutils`` stand-in, ``dbxdec-run`` for the wheel task, real Delta on the local
warehouse): ``dbxdec backfill`` records its check results, a failed notebook run's
included; ``catchup --by data``, ``undo`` and ``--canary 1 --diff-gate`` work on it.

The emulator follows the reference per task type: a notebook task run has no ``logs``
("It's not supported for the notebook_task", databricks-sdk ``jobs.RunOutput.logs``),
only ``notebook_output.result``, absent when the notebook raised.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.definitions import default_registry
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, Cli
from tests.launch.notebook_project import EMPTY_DAY, MODULE, write_notebook_project

pytestmark = pytest.mark.spark


@pytest.fixture
def project(
    tmp_path: Path, workspace_env: JobsEmulator, monkeypatch: pytest.MonkeyPatch, spark: Any
) -> tuple[Path, JobsEmulator, int]:
    """The project, its job deployed on the emulator (which executes its tasks on the
    project's warehouse), and the CLI."""
    root = write_notebook_project(tmp_path / "proj")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(root / ".dbxdec" / "warehouse"))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    sys.modules.pop(MODULE, None)
    __import__(MODULE)
    settings = job_resource(default_registry.get("nb_orders"), package_name="nbproj")
    job_id = workspace_env.create_job("nb_orders", settings=settings)
    workspace_env.execute_tasks(job_id)
    return root, workspace_env, job_id


def test_backfill_canary_catchup_by_data_and_undo_read_the_notebook_task_s_reports(
    capsys: pytest.CaptureFixture[str], project: tuple[Path, JobsEmulator, int]
) -> None:
    root, emu, _ = project
    cli = Cli(root, capsys)
    code, out, err = cli(
        "backfill", "nb_orders", "--start", "2024-01-01", "--end", "2024-01-03", *FAST
    )
    tasks: dict[int, list[tuple[str, str, bool]]] = {}
    for t in emu.executed_tasks():
        tasks.setdefault(t.run_id, []).append((t.task_key, t.kind, t.error == ""))
    ok = [("write_orders", "notebook_task", True), ("write_totals", "python_wheel_task", True)]
    failed = [("write_orders", "notebook_task", False)]  # write_totals never ran
    assert sorted(tasks.values()) == sorted([ok, ok, failed]), emu.executed_tasks()
    assert code == 1, out + err  # the empty day's check failed
    (ledger,) = list_ledgers(cli.project, "nb_orders")
    passed = {
        s.keys[0]: [(c["check"], c["passed"]) for c in s.attempts[-1].checks] for s in ledger.slices
    }
    assert passed == {
        "2024-01-01": [("min_row_count(1)", True)],
        "2024-01-02": [("min_row_count(1)", True)],
        EMPTY_DAY: [("min_row_count(1)", False)],
    }

    # --canary 1 --diff-gate: the measurement run's notebook task measures main.nb.orders
    code, out, err = cli(
        "backfill", "nb_orders", "--keys", "2024-01-01,2024-01-02", "--param", "rows=1",
        "--canary", "1", "--diff-gate", "10%", *FAST,
    )  # fmt: skip
    assert code == 1, out + err
    assert (
        "canary slice 2024-01-01 failed: diff gate 10%: main.nb.orders key 2024-01-01: "
        "2 -> 1 rows (-50%"
    ) in err, out + err

    # catchup --by data: a presence run of the job, its notebook task reports main.nb.orders
    code, out, err = cli(
        "catchup", "nb_orders", "--by", "data", "--start", "2024-01-01", "--end", "2024-01-04",
        "--dry-run", "--json", *FAST,
    )  # fmt: skip
    assert code == 0, out + err
    assert [k for run in json.loads(out)["runs"] for k in run["keys"]] == [EMPTY_DAY, "2024-01-04"]

    # undo (forced: the backfill created the tables): the notebook task reports the version
    # its RESTORE of main.nb.orders made
    code, out, err = cli(
        "backfill", "undo", ledger.id, "--yes", "--force", "--poll-interval", "0.01"
    )
    assert code == 0, out + err
    undone = next(
        found for found in list_ledgers(cli.project, "nb_orders") if found.id == ledger.id
    )
    assert {table for table, _ in undone.undone} == {"main.nb.orders", "main.nb.totals"}
