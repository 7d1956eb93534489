"""A dependant whose table-update trigger waits for ALL its tables keeps that condition
through a ``--downstream`` backfill's pause, held locally or by a detached backfill.

``jobs/get`` never returns ``trigger.table_update.condition`` (databricks/cli#6315; the
emulator follows it) and ``jobs/update`` replaces the trigger whole, so every pause and
restore writes the trigger the project declares; the requests the emulator received
show it. A detached backfill records the declarations in its hold file at ``--detach``:
the controller that restores the trigger has no project to read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from databricks_bundle_decorators import DailyBackfill, Registry, source, task
from databricks_bundle_decorators.bundle.table_graph import build_table_graph
from databricks_bundle_decorators.definitions.triggers import TableUpdate
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.launch.control.controller import (
    end_hold,
    plan_hold,
    read_hold,
    renew_hold,
    start_hold,
)
from databricks_bundle_decorators.launch.guard.pause.trigger_pause import hold_dependant_triggers
from databricks_bundle_decorators.launch.ledger.journal import journal_folder
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import written_trigger

A = source("main.cond.a", event_time="ts")
OTHER = source("main.cond.other", event_time="ts")
DAILY = DailyBackfill("2024-01-01")
registry = Registry()


@registry.job(name="producer", backfill=DAILY)
def producer() -> None:
    @task(name="t", io_manager=SparkTableIoManager("main.cond.a", partition_column="day"))
    def t() -> Any:
        raise NotImplementedError

    t()


@registry.job(
    name="waits_for_all", backfill=DAILY, sources=[A, OTHER],
    triggered_by=TableUpdate([A, OTHER], condition="ALL_UPDATED"),
)  # fmt: skip
def waits_for_all() -> None:
    @task(name="t", io_manager=SparkTableIoManager("main.cond.b", partition_column="day"))
    def t() -> Any:
        raise NotImplementedError

    t()


DECLARED = {
    "table_update": {"table_names": ["main.cond.a", "main.cond.other"], "condition": "ALL_UPDATED"}
}


def deploy(emu: JobsEmulator) -> dict[str, int]:
    return {
        "producer": emu.create_job("producer"),
        "waits_for_all": emu.create_job("waits_for_all", settings={"trigger": DECLARED}),
    }


def test_a_local_downstream_hold_writes_the_condition_back(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu)
    client = emu.workspace_client()
    with hold_dependant_triggers(
        client, build_table_graph(registry), ["main.cond.a"],
        definitions={j.name: j for j in registry}, root=tmp_path, job_id_of=ids.__getitem__,
    ) as held:  # fmt: skip
        assert [d.job for d in held] == ["waits_for_all"]
        assert written_trigger(emu, ids["waits_for_all"]) == {**DECLARED, "pause_status": "PAUSED"}
    assert written_trigger(emu, ids["waits_for_all"]) == {**DECLARED, "pause_status": "UNPAUSED"}


def test_a_detached_hold_records_the_declaration_and_the_controller_writes_it_back(
    emu: JobsEmulator,
) -> None:
    ids = deploy(emu)
    controller = emu.create_job("dbxdec_controller")
    client = emu.workspace_client()
    hold = plan_hold(registry, ["producer"], ids)
    assert hold.triggers == {"waits_for_all": DECLARED}
    client.workspace.mkdirs(journal_folder(ids["producer"], "bf-cond"))  # as --detach makes it

    start_hold(
        client, hold, job_id=ids["producer"], backfill_id="bf-cond", controller_job_id=controller
    )
    assert written_trigger(emu, ids["waits_for_all"]) == {**DECLARED, "pause_status": "PAUSED"}
    # a controller generation reads the hold from the workspace, with no project
    recorded = read_hold(client, ids["producer"], "bf-cond")
    assert recorded is not None and recorded.triggers == {"waits_for_all": DECLARED}
    renew_hold(client, recorded, backfill_id="bf-cond", controller_job_id=controller)
    end_hold(client, recorded, backfill_id="bf-cond", finished=False, say=lambda line: None)
    assert written_trigger(emu, ids["waits_for_all"]) == {**DECLARED, "pause_status": "UNPAUSED"}
