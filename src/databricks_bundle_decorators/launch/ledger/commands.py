"""The exact commands printed for rerunning failures and resuming a backfill."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..plan.options import default_of
from .ledger import Ledger

MAX_LISTED_KEYS = 100


def _connection_args(ledger: Ledger) -> list[str]:
    spec = ledger.backend
    if spec.kind == "local":
        return ["--local"]
    args: list[str] = []
    if spec.job_id is not None:
        args += ["--job-id", str(spec.job_id)]
    if spec.profile:
        args += ["--profile", spec.profile]
    return args


def rerun_command(
    ledger: Ledger, failed_keys: Sequence[str], context_args: Sequence[str] = ()
) -> str:
    """``dbxdec backfill JOB --keys a,b ...`` rerunning exactly ``failed_keys``.

    Beyond :data:`MAX_LISTED_KEYS` keys the command selects them from run history
    instead: ``--rerun failed --start FIRST --end LAST``.
    """
    options = ledger.options
    args = ["dbxdec", "backfill", ledger.job, *context_args]
    if len(failed_keys) <= MAX_LISTED_KEYS:
        args += ["--keys", ",".join(failed_keys)]
    else:
        ordered = sorted(failed_keys)
        args += ["--rerun", "failed", "--start", ordered[0], "--end", ordered[-1]]
    args += _connection_args(ledger)
    if options.batch_auto:
        args += ["--batch-size", "auto"]
        if options.target_run_seconds != default_of("target_run_seconds"):
            args += ["--target-run-length", f"{options.target_run_seconds:g}s"]
    elif options.batch_size > 1:
        args += ["--batch-size", str(options.batch_size)]
    if options.exact:
        args.append("--exact")
    if options.force_rewrite:
        args.append("--force-rewrite")
    if not options.checks:
        args.append("--no-checks")
    if options.tasks:
        args += ["--tasks", options.tasks]
    for name, value in sorted(options.params.items()):
        args += ["--param", f"{name}={value}"]
    args += ["--max-concurrent", str(options.max_concurrent)]
    if options.retries:
        args += ["--retries", str(options.retries)]
    if options.retry_for is not None:
        args += ["--retry-for", f"{options.retry_for:g}s"]
    return shlex.join(args)


def resume_command(ledger: Ledger, context_args: Sequence[str] = ()) -> str:
    """``dbxdec backfill --resume ID``."""
    return shlex.join(["dbxdec", "backfill", *context_args, "--resume", ledger.id])
