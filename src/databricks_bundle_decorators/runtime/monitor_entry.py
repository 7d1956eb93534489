"""``dbxdec-monitor``: the wheel entry point of a generated deadline monitor job::

    dbxdec-monitor --dbxdec_job=sales --dbxdec_module=pkg.sales --backfill_run_time=1711955400000

Overdue is judged at ``backfill_run_time``, the run's trigger time, never the wall clock
(a repair judges the same keys). Exit codes: 0 no new overdue key, 1 new overdue keys
(the ``Error:`` line lists them), 2 bad arguments or a job without a monitor.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, timezone

from ..backfill.wire import BACKFILL_RUN_TIME_PARAM, JOB_PARAM, MODULE_PARAM, parse_run_time
from ..definitions.contracts import RunEnvironment
from ..errors import UsageError, counted
from .core.context import on_databricks
from .entrypoint import exit_with, load_job, run_environment
from .running.deadline_monitor import run_monitor


def _arguments(argv: Sequence[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in argv:
        name, sep, value = item.removeprefix("--").partition("=")
        if not item.startswith("--") or not sep or not name:
            raise UsageError(f"unexpected argument {item!r}: dbxdec-monitor takes --name=value")
        values[name] = value
    missing = [f"--{n}" for n in (JOB_PARAM, MODULE_PARAM) if not values.get(n)]
    if missing:
        raise UsageError(f"dbxdec-monitor needs {', '.join(missing)}")
    return values


def run(argv: Sequence[str], *, environment: RunEnvironment | None = None) -> None:
    """One monitor run for the job the arguments name. Raises what :func:`main` reports.

    Args:
        environment: Where the tables are (default: Unity Catalog on Databricks, the
            local warehouse elsewhere).
    """
    values = _arguments(argv)
    job = load_job(values[MODULE_PARAM], values[JOB_PARAM])
    try:
        now = parse_run_time(values.get(BACKFILL_RUN_TIME_PARAM, ""))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if now is None:  # run by hand: the run starts now
        now = datetime.now(timezone.utc)
    if environment is None:
        databricks = on_databricks()
        if not databricks:
            from .session.spark import prepare_local_spark

            prepare_local_spark()
        environment = run_environment(databricks)
    late = run_monitor(job, environment, now)
    keys = ", ".join(k.key for k in late[:20]) + (" ..." if len(late) > 20 else "")
    print(
        f"dbxdec-monitor {job.name}: {counted(len(late), 'overdue key')}, none new: {keys}",
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: one ``Error:`` line and the exit code on failure."""
    exit_with(run, sys.argv[1:] if argv is None else argv, traceback=False)
