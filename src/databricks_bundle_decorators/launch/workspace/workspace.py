"""Reaching a Databricks workspace in bounded time, and saying in one line why not.

``databricks-sdk`` silently retries a refused connection, an unknown host or a timeout
for 300 s on every call, so dbxdec sets its own budgets: :func:`connect` probes with one
cheap request (``jobs/list?limit=1``) in seconds, raising
:class:`~...errors.WorkspaceRejected` (exit 4) or :class:`~...errors.WorkspaceUnreachable`
(exit 5); planning calls get :data:`PLAN_CALL_SECONDS`; :func:`backfill_client` bounds
each submit and poll, and the scheduler retries across an outage.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ...backfill.wire import ORDER_PARAM
from ...errors import DbxdecError, UsageError, WorkspaceRejected, WorkspaceUnreachable

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.sql import StatementResponse

METADATA_SECONDS = 1  # the SDK's best-effort /.well-known probe when a config is built
PROBE_SECONDS = 3  # the first authenticated request: a dead host fails in under 10 s
PROBE_HTTP_SECONDS = 5.0
CONNECT_SECONDS = 3.0  # reach(): a TCP connection to the host, before any request
PLAN_CALL_SECONDS = 30  # retry budget and per-request timeout of each planning call
BACKFILL_CALL_SECONDS = 6  # each submit, poll or cancel: a refused connection, ~7.5 s
BACKFILL_HTTP_SECONDS = 8.0

ProblemKind = Literal["credentials", "permission", "not-databricks", "unreachable"]


def connect(
    *, host: str | None = None, profile: str | None = None, **config: Any
) -> WorkspaceClient:
    """A ``WorkspaceClient`` from the usual environment (``DATABRICKS_HOST``,
    ``DATABRICKS_TOKEN``, ``~/.databrickscfg``), ``host`` and ``profile``, that has
    answered one authenticated request.

    Raises:
        UsageError: no usable credentials were found.
        WorkspaceRejected: the workspace refused the credentials or the permission.
        WorkspaceUnreachable: no Databricks workspace answered in time.
    """
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.config import Config

    settings = {
        "retry_timeout_seconds": METADATA_SECONDS,
        "http_timeout_seconds": PROBE_HTTP_SECONDS,
        **config,
    }
    named = host or (None if profile else os.environ.get("DATABRICKS_HOST"))
    if named:  # before the SDK's own (retried) metadata request: a dead host fails at once
        reach(named, _host_origin(host, profile))
    try:
        cfg = Config(host=host, profile=profile, **settings)
    except Exception as exc:  # the SDK raises ValueError subclasses with long texts
        reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(", please check")[0]
        raise UsageError(
            f"no usable Databricks credentials ({reason[:160]}): set DATABRICKS_HOST and "
            "DATABRICKS_TOKEN, pass --profile NAME, or run locally with --local"
        ) from None
    origin = _host_origin(host, profile)
    reach(cfg.host, origin)
    if "retry_timeout_seconds" not in config:
        cfg.retry_timeout_seconds = PROBE_SECONDS
    with workspace_errors(cfg.host, origin=origin, probing=True):
        next(iter(WorkspaceClient(config=cfg).jobs.list(limit=1)), None)
    if "retry_timeout_seconds" not in config:
        cfg.retry_timeout_seconds = PLAN_CALL_SECONDS
        cfg.http_timeout_seconds = float(PLAN_CALL_SECONDS)
    return WorkspaceClient(config=cfg)


def reach(host: str | None, origin: str = "") -> None:
    """Open (and close) one TCP connection to ``host``'s address, within
    :data:`CONNECT_SECONDS`: an unknown name, a refused connection or silence fail here in
    one line, before the SDK retries them for seconds. ``None`` (no host yet) passes.

    Raises:
        WorkspaceUnreachable: the name does not resolve, or nothing answers on its port.
    """
    if not host:
        return
    url = urlsplit(host if "://" in host else f"https://{host}")
    if not url.hostname:
        return  # the SDK says what is wrong with it
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
    except ValueError:
        return
    if _proxied(url.geturl()):  # requests goes through the proxy: it answers for the host
        return
    with workspace_errors(host, origin=origin, probing=True):
        try:
            socket.create_connection((url.hostname, port), timeout=CONNECT_SECONDS).close()
        except socket.gaierror as exc:
            raise _Unreached("host name not found") from exc
        except ConnectionRefusedError as exc:
            raise _Unreached("connection refused") from exc
        except TimeoutError as exc:
            raise _Unreached(f"no answer in {CONNECT_SECONDS:g} s") from exc
        except OSError as exc:
            raise _Unreached(exc.strerror or type(exc).__name__) from exc


def _proxied(url: str) -> bool:
    """Whether requests (the SDK's HTTP client) reaches ``url`` through a proxy of the
    environment (``HTTPS_PROXY``..., unless ``NO_PROXY`` names the host)."""
    import requests.utils

    return bool(requests.utils.get_environ_proxies(url))


class _Unreached(Exception):
    """A failed :func:`reach`: its reason, classified as unreachable."""


def backfill_client(client: WorkspaceClient) -> WorkspaceClient:
    """A client on the same workspace and credentials whose every call gives up after
    :data:`BACKFILL_CALL_SECONDS` of retries and :data:`BACKFILL_HTTP_SECONDS` per
    request (smaller values kept); ``client`` is left as it was."""
    from databricks.sdk import WorkspaceClient

    cfg = client.config
    retry, http = cfg.retry_timeout_seconds or 300, cfg.http_timeout_seconds or 60.0
    cfg.retry_timeout_seconds = min(retry, BACKFILL_CALL_SECONDS)
    cfg.http_timeout_seconds = min(http, BACKFILL_HTTP_SECONDS)
    try:
        return WorkspaceClient(config=cfg)
    finally:
        cfg.retry_timeout_seconds, cfg.http_timeout_seconds = retry, http


@contextmanager
def workspace_errors(
    host: str | None, *, origin: str = "", probing: bool = False
) -> Iterator[None]:
    """Turn the SDK's transport and authentication failures inside the block into one
    :class:`~...errors.DbxdecError` line naming ``host`` (``probing``: the first request,
    so any failure means the host is not a usable workspace)."""
    try:
        yield
    except DbxdecError:
        raise
    except Exception as exc:
        problem = environment_problem(exc, host=host, origin=origin, probing=probing)
        if problem is None:
            raise
        raise problem from None


def environment_problem(
    exc: BaseException, *, host: str | None = None, origin: str = "", probing: bool = False
) -> DbxdecError | None:
    """The one-line error for an SDK or transport failure, or ``None`` if ``exc`` is
    not about reaching the workspace."""
    found = classify(exc)
    where = f"the workspace at {host}" if host else "the workspace"
    check = f"check the host ({origin})" if origin else "check the host (DATABRICKS_HOST)"
    if found is None and not probing:
        return None
    if found is None and probing and type(exc).__name__ == "NotFound":
        found = ("not-databricks", "the Jobs API answered 404 Not Found")  # every workspace has it
    kind, reason = found or ("unreachable", f"unexpected answer: {first_line(exc)}")
    if kind == "permission":
        return WorkspaceRejected(
            f"{where} refused access ({reason}): the identity behind these credentials "
            "needs access to the job (CAN MANAGE RUN to launch runs); ask a workspace admin "
            "or use another --profile, then run the command again"
        )
    if kind == "credentials":
        return WorkspaceRejected(
            f"{where} rejected the credentials ({reason}): renew the token "
            "(DATABRICKS_TOKEN, or `databricks auth login` for a profile) or pass another "
            "--profile, then run the command again"
        )
    if kind == "not-databricks":
        return WorkspaceUnreachable(
            f"{where} is not a Databricks workspace ({reason}): {check}; it should be the "
            "workspace URL, such as "
            "https://adb-1234567890123456.7.azuredatabricks.net"
        )
    return WorkspaceUnreachable(
        f"cannot reach {where} ({reason}): {check} and the network (VPN, proxy), then run "
        "the command again"
    )


def classify(exc: BaseException) -> tuple[ProblemKind, str] | None:
    """``(kind, short reason)`` for a failure to use the workspace at all; ``None`` for
    anything else (a bad request, an unknown job, a failed run, a bug)."""
    import requests
    from databricks.sdk.errors import (
        PermissionDenied,
        TemporarilyUnavailable,
        TooManyRequests,
        Unauthenticated,
    )
    from databricks.sdk.errors.base import DatabricksError
    from databricks.sdk.errors.private_link import PrivateLinkValidationError

    if isinstance(exc, _Unreached):
        return "unreachable", str(exc)
    if isinstance(exc, TimeoutError) and exc.__cause__ is not None:  # the SDK's retry budget
        inner = classify(exc.__cause__)
        if inner is not None:
            return inner
        return "unreachable", f"no answer after retrying: {first_line(exc.__cause__)}"
    if isinstance(exc, Unauthenticated):
        return "credentials", f"401 {_code(exc, 'UNAUTHENTICATED')}: {first_line(exc)}"
    if isinstance(exc, PermissionDenied | PrivateLinkValidationError):
        return "permission", f"403 {_code(exc, 'PERMISSION_DENIED')}: {first_line(exc)}"
    if isinstance(exc, requests.exceptions.JSONDecodeError):
        return "not-databricks", "it answered without JSON"
    if isinstance(exc, DatabricksError) and str(exc).startswith("unable to parse response"):
        status = re.search(r"< (\d{3}) ", str(exc))
        answered = f"answered {status.group(1)}" if status else "answered"
        return "not-databricks", f"it {answered} without a Databricks error body"
    if isinstance(exc, TooManyRequests | TemporarilyUnavailable):
        return "unreachable", f"{_code(exc, 'TEMPORARILY_UNAVAILABLE')}: {first_line(exc)}"
    if isinstance(exc, requests.exceptions.Timeout):
        return "unreachable", "no answer in time"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return "unreachable", _transport_reason(exc)
    return None


def _transport_reason(exc: BaseException) -> str:
    text = repr(exc)
    if "NameResolutionError" in text or "Name or service not known" in text:
        return "host name not found"
    if "Temporary failure in name resolution" in text or "getaddrinfo" in text:
        return "host name not found"
    if "Connection refused" in text or "ConnectionRefusedError" in text:
        return "connection refused"
    if "SSLError" in text or "CERTIFICATE" in text:
        return "TLS handshake failed"
    if "RemoteDisconnected" in text or "Connection aborted" in text or "reset by peer" in text:
        return "connection closed without an answer"
    if "timed out" in text.lower():
        return "no answer in time"
    return "cannot connect"


def _code(exc: BaseException, default: str) -> str:
    return str(getattr(exc, "error_code", None) or default)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message without the SDK's ``Config: ...`` tail."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text.split(" Config: ")[0].split(". Config: ")[0].rstrip(".") or type(exc).__name__


def _host_origin(host: str | None, profile: str | None) -> str:
    if host:
        return "--host"
    if profile:
        return f"profile {profile!r}"
    if os.environ.get("DATABRICKS_HOST"):
        return "DATABRICKS_HOST"
    return "DATABRICKS_HOST or ~/.databrickscfg"


def require_order_parameter(
    client: WorkspaceClient,
    job_id: int,
    job_name: str,
    *,
    purpose: str,
    outcome: str = "nothing was launched",
) -> None:
    """Refuse a deployed job that does not declare ``dbxdec_order`` (deployed by an older
    dbxdec): a :class:`UsageError` whose advice ends with ``purpose`` (``"to
    --force-rewrite"``) and ``outcome``; also when the job cannot be read."""
    if not declares_order_parameter(client, job_id):
        raise UsageError(
            f"job {job_name!r} (id {job_id}) was deployed without the {ORDER_PARAM} parameter "
            f"(by an older dbxdec): deploy it again (dbxdec deploy) {purpose}; {outcome}"
        )


def declares_order_parameter(client: WorkspaceClient, job_id: int) -> bool:
    """Whether the deployed job declares ``dbxdec_order`` (:class:`UsageError` when it
    cannot be read)."""
    try:
        settings = client.jobs.get(job_id).settings
    except request_refusals() as exc:
        raise UsageError(f"cannot read job {job_id}: {first_line(exc)}") from None
    return ORDER_PARAM in {p.name for p in (settings.parameters if settings else None) or []}


def request_refusals() -> tuple[type[Exception], ...]:
    """The SDK's errors for a request the workspace refused (a bad request, an unknown job
    or run), for ``except request_refusals():`` (imported late: the SDK loads in 0.8 s)."""
    from databricks.sdk.errors import (
        BadRequest,
        InvalidParameterValue,
        NotFound,
        ResourceDoesNotExist,
    )

    return (BadRequest, InvalidParameterValue, NotFound, ResourceDoesNotExist)


def statement_rows(
    client: WorkspaceClient,
    warehouse_id: str,
    statement: str,
    parameters: list[Any],
    *,
    poll_interval: float,
    purpose: str,
    failed: type[DbxdecError],
) -> tuple[list[str], list[list[str | None]]]:
    """Run ``statement``, polling ``get_statement`` until it ends, and read every chunk:
    the column names and rows (``JSON_ARRAY`` strings or ``None``).

    Raises:
        failed: the statement failed: ``{purpose} on SQL warehouse {warehouse_id} failed: {why}``.
    """
    api = client.statement_execution
    answer = api.execute_statement(
        statement, warehouse_id, parameters=parameters, wait_timeout="30s"
    )
    while _statement_state(answer) in ("PENDING", "RUNNING"):
        time.sleep(poll_interval)  # the reference's way: poll get_statement
        answer = api.get_statement(str(answer.statement_id))
    if (state := _statement_state(answer)) != "SUCCEEDED":
        error = answer.status.error if answer.status is not None else None
        why = error.message if error is not None and error.message else state
        raise failed(f"{purpose} on SQL warehouse {warehouse_id} failed: {why}")
    schema = answer.manifest.schema if answer.manifest is not None else None
    names = [c.name or "" for c in (schema.columns if schema else None) or []]
    rows: list[list[str | None]] = []
    chunk = answer.result
    while chunk is not None:
        rows.extend(list(r) for r in chunk.data_array or [])
        if chunk.next_chunk_index is None:
            break
        chunk = api.get_statement_result_chunk_n(str(answer.statement_id), chunk.next_chunk_index)
    return names, rows


def _statement_state(answer: StatementResponse) -> str:
    status = answer.status
    return status.state.value if status is not None and status.state is not None else "UNKNOWN"
