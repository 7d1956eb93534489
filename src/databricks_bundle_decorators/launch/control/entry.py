"""``dbxdec-controller``: the wheel entry point of the generated ``dbxdec_controller`` job.

Databricks passes the task's parameters as ``--name=value`` arguments (the job
parameters pushed down, and the task's own ``run_id``/``controller_job_id``)::

    dbxdec-controller --backfill_id=sales-20240101-ab12 --job_id=123 --generation=1 \\
        --run_id=550315892394120 --controller_job_id=456

Test-only tuning (job parameters of a test's controller job): ``--handover_after``,
``--claim_ttl``, ``--poll_interval``, ``--control_every``, ``--client_timeout`` (seconds;
the last caps the SDK's retry budget and request timeout of every call). Credentials never
come as arguments (:mod:`.auth`). Errors are one line; exit codes are ``dbxdec``'s
(:data:`~...errors.EXIT_CODES`): 0 done, handed over or someone else's; 2 bad
arguments; 4/5 credentials refused / workspace unreachable; 6 a journal it cannot read;
7 the backfill was taken over while it ran.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ...backfill.wire.controller import (
    BACKFILL_ID_PARAM,
    CLAIM_TTL_PARAM,
    CONTROLLER_JOB_ID_PARAM,
    DEFAULT_HANDOVER_AFTER,
    GENERATION_PARAM,
    HANDOVER_AFTER_PARAM,
    JOB_ID_PARAM,
    RUN_ID_PARAM,
)
from ...errors import DbxdecError, UsageError
from ..ledger.lease import CLAIM_TTL
from .auth import DbUtils, controller_client
from .controller import ControllerRequest, run_controller

SECRET_SCOPE_PARAM = "secret_scope"
_TUNING = (
    HANDOVER_AFTER_PARAM,
    CLAIM_TTL_PARAM,
    "poll_interval",
    "control_every",
    "client_timeout",
)
_KNOWN = {
    BACKFILL_ID_PARAM,
    JOB_ID_PARAM,
    GENERATION_PARAM,
    RUN_ID_PARAM,
    CONTROLLER_JOB_ID_PARAM,
    SECRET_SCOPE_PARAM,
    *_TUNING,
}


def parse_arguments(argv: Sequence[str]) -> tuple[ControllerRequest, str, float | None]:
    """The request, the secret scope name and the client timeout in ``argv``.

    Raises:
        UsageError: an argument is not ``--name=value``, unknown, missing or malformed.
    """
    values: dict[str, str] = {}
    for item in argv:
        name, sep, value = item.removeprefix("--").partition("=")
        if not item.startswith("--") or not sep or not name:
            raise UsageError(f"unexpected argument {item!r}: dbxdec-controller takes --name=value")
        if name not in _KNOWN:
            raise UsageError(f"unknown argument --{name}: dbxdec-controller takes {sorted(_KNOWN)}")
        values[name] = value
    missing = [f"--{n}" for n in (BACKFILL_ID_PARAM, JOB_ID_PARAM) if not values.get(n)]
    if missing:
        raise UsageError(f"dbxdec-controller needs {', '.join(missing)}")
    controller_job = values.get(CONTROLLER_JOB_ID_PARAM, "")
    request = ControllerRequest(
        backfill_id=values[BACKFILL_ID_PARAM],
        job_id=_number(values, JOB_ID_PARAM, int),
        generation=_number(values, GENERATION_PARAM, int, "1"),
        run_id=values.get(RUN_ID_PARAM) or "local",
        controller_job_id=int(controller_job) if controller_job.isdigit() else None,
        handover_after=_number(values, HANDOVER_AFTER_PARAM, float, str(DEFAULT_HANDOVER_AFTER)),
        claim_ttl=_number(values, CLAIM_TTL_PARAM, float, str(CLAIM_TTL)),
        poll_interval=_number(values, "poll_interval", float, "1"),
        control_every=_number(values, "control_every", float, "5"),
        passed_on={n: values[n] for n in _TUNING if values.get(n)},
    )
    timeout = _number(values, "client_timeout", float, "0") or None
    return request, values.get(SECRET_SCOPE_PARAM, ""), timeout


def _number(values: dict[str, str], name: str, kind: type, default: str = "") -> Any:
    text = values.get(name) or default
    try:
        number = kind(text)
    except ValueError:
        raise UsageError(f"--{name}={text!r}: expected a number") from None
    if number < 0:
        raise UsageError(f"--{name}={text!r}: expected a number >= 0")
    return number


def main(argv: Sequence[str] | None = None, *, dbutils: DbUtils | None = None) -> None:
    """Run one controller; exit with its code (errors: one ``Error:`` line).

    Args:
        dbutils: Reads the secret scope (default: the cluster's; tests: a stand-in).
    """
    try:
        request, scope, timeout = parse_arguments(sys.argv[1:] if argv is None else argv)
        client = controller_client(scope, timeout=timeout, dbutils=dbutils)
        code = run_controller(client, request)
    except DbxdecError as exc:
        print(f"Error: {exc.render()}", file=sys.stderr, flush=True)
        code = exc.exit_code
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
