"""The emulator, a backfilled job and the controller job, for the controller tests.

Times are short so that every test takes seconds: runs last :data:`RUN_SECONDS`, the
controller polls every 0.05 s, reads control ops every 0.05 s, its claim lasts
:data:`CLAIM_TTL` s, and it hands over after ``handover_after`` (default: never within
a test).
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.control.detach import Detached, detach_backfill
from databricks_bundle_decorators.launch.launcher import BackfillRequest, Pacing, plan_backfill
from databricks_bundle_decorators.testing import JobsEmulator
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from . import killing_controller
from .conftest import BACKFILL_PARAMS

TOKEN = "dapi-controller-secret-7f3a9c"
RUN_SECONDS = 0.2
CLAIM_TTL = 4.0


@dataclass
class Workspace:
    emu: JobsEmulator
    job_id: int
    controller_job: int
    root: Path

    def detach(self, registry: Registry, keys: list[str], **pacing: object) -> Detached:
        request = BackfillRequest(
            "nightly",
            keys=tuple(keys),
            pacing=Pacing(max_concurrent=4, **pacing),  # type: ignore[arg-type]
        )
        prepared = plan_backfill(
            request,
            root=self.root,
            registry=registry,
            warehouse=self.root / "wh",
            client=self.emu.workspace_client(),
        )
        return detach_backfill(prepared, root=self.root)

    def tune(self, **tuning: str) -> None:
        """Change the controller job's parameter defaults (``jobs/update``)."""
        tune_controller(self.emu, self.controller_job, **tuning)

    def kill_at(self, point: str) -> None:
        """Kill the first controller process that reaches ``point`` (``<point>:<n>``)."""
        marker = self.root / "killed"
        processes = processes_of(self.emu)
        processes.module = killing_controller.MODULE  # the entry point with kill points
        processes.extra_env[killing_controller.KILL_AT_ENV] = f"{point}:{marker}"

    def attempts(self) -> list[int | None]:
        """The exit codes of the controller processes, in start order."""
        return [a.returncode for a in processes_of(self.emu).outputs()]

    def wait_backfill_done(self, count: int, timeout: float = 30.0) -> None:
        """Until every controller run ended and ``count`` runs of the job succeeded."""

        def done(runs: list) -> bool:  # type: ignore[type-arg]
            ours = [r for r in runs if r.job_id == self.job_id and r.result_state == "SUCCESS"]
            ctl = [r for r in runs if r.job_id == self.controller_job]
            return len(ours) >= count and bool(ctl) and not any(r.active for r in ctl)

        self.emu.wait_for(done, timeout=timeout, what="the detached backfill finished")

    def outputs(self) -> str:
        """Every controller process's stdout and stderr, in order."""
        return "\n".join(
            (a.stdout + a.stderr).decode(errors="replace") for a in processes_of(self.emu).outputs()
        )

    def assert_tokenless(self, *more: str) -> None:
        """No token in any job parameter, run-now body, workspace file (journal segments,
        claims, lost markers), controller log or task parameter, local file, nor in
        ``more`` (what a CLI printed)."""
        emu = self.emu
        bodies = [str(b) for b in emu.run_now_bodies()]
        params = [str(r.job_parameters) for r in emu.runs()]
        files = [content.decode() for content in emu.workspace_files("/").values()]
        logs = self.outputs()
        argvs = [" ".join(a.argv) for a in processes_of(emu).outputs()]  # the task's parameters
        local = [
            p.read_bytes().decode(errors="replace") for p in self.root.rglob("*") if p.is_file()
        ]
        assert files and logs and bodies and argvs
        for text in [*bodies, *params, *files, logs, *local, *argvs, *more]:
            assert TOKEN not in text

    def keys_run(self) -> collections.Counter[str]:
        return collections.Counter(
            r.job_parameters["backfill_key"] for r in self.emu.runs(self.job_id)
        )


CONTROLLER_PARAMS = {
    "backfill_id": "",
    "job_id": "",
    "generation": "",
    "handover_after": "600",
    "claim_ttl": str(CLAIM_TTL),
    "poll_interval": "0.05",
    "control_every": "0.05",
}


def tune_controller(emu: JobsEmulator, controller_job: int, **tuning: str) -> None:
    """Change the controller job's parameter defaults (``jobs/update``)."""
    from databricks.sdk.service.jobs import JobParameterDefinition, JobSettings

    params = {**CONTROLLER_PARAMS, **tuning}
    settings = JobSettings(
        parameters=[JobParameterDefinition(name=k, default=v) for k, v in params.items()]
    )
    emu.workspace_client().jobs.update(controller_job, new_settings=settings)


def controller_job(emu: JobsEmulator) -> int:
    return emu.create_job(
        "dbxdec_controller",
        parameters=CONTROLLER_PARAMS,
        max_concurrent_runs=100,
        settings={
            "tasks": [
                {
                    "task_key": "controller",
                    "max_retries": -1,
                    "retry_on_timeout": True,
                    "python_wheel_task": {
                        "package_name": "dbxdec",
                        "entry_point": "dbxdec-controller",
                        "named_parameters": {
                            "run_id": "{{job.run_id}}",
                            "controller_job_id": "{{job.id}}",
                        },
                    },
                }
            ]
        },
    )


def open_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """The body of each controller test module's ``workspace`` fixture."""
    with JobsEmulator(token=TOKEN) as emu:
        emu.default_duration = RUN_SECONDS
        job_id = emu.create_job(
            "nightly", parameters={**BACKFILL_PARAMS, "source": "x"}, max_concurrent_runs=10
        )
        ctl = controller_job(emu)
        processes_of(emu).extra_env = {"DBXDEC_CLAIMS_DIR": "/Shared/dbxdec/claims"}
        yield Workspace(emu, job_id, ctl, tmp_path)
    assert os.environ.get("DATABRICKS_TOKEN") != TOKEN
