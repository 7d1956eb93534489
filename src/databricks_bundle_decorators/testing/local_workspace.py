"""``dbxdec emulator``: the Jobs API emulator serving one project, with its jobs deployed
and their task code run on the local Spark, so the Databricks path can be tried without
a workspace (docs/guides/try-without-a-workspace.md).

Run as ``python -m databricks_bundle_decorators.testing.local_workspace --root DIR`` (the
``dbxdec emulator`` command starts it: the CLI sits above this layer and never imports it).
It deploys what ``databricks bundle deploy -t TARGET`` would, as the deployment-modes page
says a development target does (https://docs.databricks.com/aws/en/dev-tools/bundles/deployment-modes):
names prefixed ``[dev <short name>] `` (or the target's ``presets.name_prefix``), a ``dev``
tag, schedules and triggers paused, concurrent runs enabled (``max_concurrent_runs`` 4, the
Databricks CLI's value, where a job sets none). The user is the login name at
``localhost``; its token (printed by ``dbxdec emulator --env``) owns every job. Task runs
execute here one at a time (:meth:`JobsEmulator.execute_tasks`) on the project's local
warehouse; the controller of detached backfills runs as a process, as on Databricks.

The token and address are kept in ``.dbxdec/emulator.json`` (mode 0600) while it serves,
for ``dbxdec emulator --env``; the token is this emulator's own, valid for no workspace,
and the file is removed when it stops.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import secrets
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ..atomic import write_atomically
from ..bundle.workflows import deployable_jobs, open_project
from ..cli.commands.emulator_commands import EmulatorState, read_state, state_path
from ..errors import DbxdecError, UsageError, counted
from ..launch.workspace.target import needs_short_name, short_user_name, with_short_name
from .emulator import JobsEmulator

DEVELOPMENT_CONCURRENT_RUNS = 4
"""What the Databricks CLI sets on a development target's job that sets none."""


def deployed_name(name: str, *, dev_mode: bool, prefix: str | None, short_name: str) -> str:
    """The name ``databricks bundle deploy`` gives job ``name`` on the target."""
    if prefix is not None:
        return (
            f"{with_short_name(prefix, short_name) if needs_short_name(prefix) else prefix}{name}"
        )
    return f"[dev {short_name}] {name}" if dev_mode else name


def development_settings(settings: dict[str, Any], short_name: str) -> dict[str, Any]:
    """``settings`` as a development target deploys them: a ``dev`` tag, schedules and
    triggers paused unless a job says ``UNPAUSED``, concurrent runs where none are set."""
    out = dict(settings)
    out["tags"] = {**out.get("tags", {}), "dev": short_name}
    for block in ("schedule", "trigger", "continuous"):
        if isinstance(out.get(block), dict) and "pause_status" not in out[block]:
            out[block] = {**out[block], "pause_status": "PAUSED"}
    out.setdefault("max_concurrent_runs", DEVELOPMENT_CONCURRENT_RUNS)
    return out


def serve(root: Path, target: str | None, port: int, stop: threading.Event) -> None:
    """Serve ``root``'s jobs until ``stop`` is set; prints what was deployed.

    Raises:
        UsageError: another emulator serves the project, or the port is taken.
        DbxdecError: the project does not load or generate.
    """
    project = open_project(root, (), target)
    root = project.config.root
    running = read_state(root)
    if running is not None:
        raise UsageError(
            f"an emulator already serves this project at {running.host} (pid {running.pid}): "
            "stop it first (Ctrl-C in its terminal)"
        )
    jobs = deployable_jobs(project, project.options(), nothing="nothing was deployed")
    mode = project.target_mode
    user = f"{getpass.getuser()}@localhost"
    short = short_user_name(user)
    dev_mode = mode is not None and mode.mode == "development"
    target_settings = (
        project.bundle_file.target_settings.get(project.target)
        if project.bundle_file is not None and project.target is not None
        else None
    )
    prefix = target_settings.name_prefix if target_settings is not None else None
    warehouse = root / ".dbxdec" / "warehouse"
    token = f"dapi{secrets.token_hex(16)}"
    emulator = JobsEmulator(token=token, user_name=user, port=port)
    try:
        emulator.start()
    except OSError as exc:
        raise UsageError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror}); "
            "pick another port or leave --port out for a free one"
        ) from None
    try:
        _environment(emulator, token, warehouse)
        deployed = []
        for name, settings in jobs.items():
            shown = deployed_name(name, dev_mode=dev_mode, prefix=prefix, short_name=short)
            body = development_settings(settings, short) if dev_mode else dict(settings)
            job_id = emulator.create_job(shown, settings={**body, "name": shown})
            emulator.execute_tasks(job_id)  # the controller's runs are processes instead
            deployed.append((shown, job_id))
        state = EmulatorState(host=emulator.url, token=token, pid=os.getpid())
        write_atomically(state_path(root), json.dumps(state.to_json()), mode=0o600)
        try:
            _banner(root, emulator.url, project.target, deployed, warehouse)
            stop.wait()
        finally:
            with contextlib.suppress(OSError):
                state_path(root).unlink()
    finally:
        emulator.stop()


def _environment(emulator: JobsEmulator, token: str, warehouse: Path) -> None:
    """Task code run here, and the controller's processes, see this workspace and the
    project's local warehouse, never another workspace's credentials."""
    for name in list(os.environ):
        if name.startswith("DATABRICKS_"):
            del os.environ[name]
    os.environ.update(
        DATABRICKS_HOST=emulator.url, DATABRICKS_TOKEN=token, DBXDEC_WAREHOUSE=str(warehouse)
    )
    from ._endpoints._emulator_processes import processes_of

    processes_of(emulator).extra_env = {"PYTHONPATH": os.pathsep.join(sys.path)}


def _banner(
    root: Path, url: str, target: str | None, deployed: list[tuple[str, int]], warehouse: Path
) -> None:
    where = f"-t {target}" if target else "their own names"
    print(f"Jobs API emulator for {root.name} at {url}", flush=True)
    print(f"Deployed {counted(len(deployed), 'job')} as {where} would:")
    for name, job_id in deployed:
        print(f"  {name} (job {job_id})")
    shown = os.path.relpath(warehouse, root)
    print(f"Task code runs here, on the local Spark, writing {shown}.")
    print('In another terminal, in this folder: eval "$(dbxdec emulator --env)"')
    print("Ctrl-C stops it.", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; the exit status of ``dbxdec --help``."""
    parser = argparse.ArgumentParser(prog="dbxdec emulator")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--target", default=None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    interrupted: list[int] = []

    def on_signal(number: int, _frame: object) -> None:
        interrupted.append(number)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        serve(args.root, args.target, args.port, stop)
    except DbxdecError as exc:
        print(f"Error: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    return 130 if interrupted and interrupted[0] == signal.SIGINT else 0


if __name__ == "__main__":
    sys.exit(main())
