"""``dbxdec-controller``: the wheel entry point of the generated ``dbxdec_controller`` job,
and how it authenticates.

Databricks passes the task's parameters as ``--name=value`` arguments::

    dbxdec-controller --backfill_id=sales-20240101-ab12 --job_id=123 --generation=1 \\
        --run_id=550315892394120 --controller_job_id=456

Test-only tuning: ``--handover_after``, ``--claim_ttl``, ``--poll_interval``,
``--control_every``, ``--client_timeout`` (seconds). Credentials never come as arguments.
Errors are one line; exit codes are ``dbxdec``'s (:data:`~...errors.EXIT_CODES`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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
from ...errors import DbxdecError, UsageError, WorkspaceRejected
from ...runtime.core.job_auth import (
    CLIENT_ID_KEY,
    CLIENT_SECRET_KEY,
    DbUtils,
    service_principal_settings,
)
from ..ledger.lease import CLAIM_TTL
from ..workspace.workspace import connect
from .controller import ControllerRequest, run_controller

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

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


def controller_client(
    secret_scope: str = "", *, timeout: float | None = None, dbutils: DbUtils | None = None
) -> WorkspaceClient:
    """A workspace client for this controller run: the SDK's default auth (probed by
    :func:`..workspace.workspace.connect`), else OAuth M2M credentials of the service
    principal from ``secret_scope`` (as :mod:`...runtime.core.job_auth`; never a
    credential in a parameter, log line or journal); ``timeout`` caps each call.

    Args:
        dbutils: Reads the secret scope (default: the cluster's).

    Raises:
        UsageError: no credentials by default auth and no usable secret scope.
        WorkspaceRejected: the workspace refused the credentials (exit 4).
        WorkspaceUnreachable: the workspace did not answer (exit 5).
    """
    limits: dict[str, Any] = {}
    if timeout is not None:
        limits = {"retry_timeout_seconds": int(max(1, timeout)), "http_timeout_seconds": timeout}
    try:
        return connect(**limits)
    except UsageError:
        if not secret_scope:
            raise UsageError(
                "no default Databricks credentials reach the workspace from this run, and no "
                "secret scope is set: set secret_scope in [tool.dbxdec.controller] (a scope "
                f"holding the service principal's {CLIENT_ID_KEY} and {CLIENT_SECRET_KEY}), "
                "then generate and deploy again"
            ) from None
    settings = service_principal_settings(secret_scope, dbutils)
    try:
        return connect(**settings, **limits)
    except UsageError as exc:  # what the SDK says never holds the secret: it is not sent
        raise UsageError(
            f"the service principal of secret scope {secret_scope!r} cannot authenticate: {exc}"
        ) from None
    except DbxdecError as exc:
        if exc.exit_code != WorkspaceRejected.exit_code and not _token_refused(exc):
            raise
        raise WorkspaceRejected(
            f"the workspace at {settings['host']} refused the OAuth client ID and secret in "
            f"secret scope {secret_scope!r} (keys {CLIENT_ID_KEY!r}, {CLIENT_SECRET_KEY!r}): "
            "store the service principal's current OAuth secret there, then start the "
            "controller again"
        ) from None


def _token_refused(exc: DbxdecError) -> bool:
    """Whether ``exc`` is the token endpoint refusing the client (``invalid_client``,
    RFC 6749 section 5.2; the SDK raises it as ``ValueError("invalid_client: ...")``)."""
    return "invalid_client" in str(exc) or "unauthorized_client" in str(exc)


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
