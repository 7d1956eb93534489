"""The Workspace API calls of a journal, and what their failures mean: one line naming
what was read or written (:mod:`.journal_read` says what the journal is).

The SDK's errors are classified here rather than with
:func:`..workspace.workspace.classify`: the ledger room sits below ``backends`` and may
not import it, and the journal needs one distinction only -- did the workspace answer.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

from ...errors import (
    DbxdecError,
    LocalStateProblem,
    WorkspaceRejected,
    WorkspaceUnreachable,
)
from .local_state import one_line

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

JOURNAL_DIR_ENV = "DBXDEC_JOURNAL_DIR"
Answer = Literal["unanswered", "refused", "other"]


def list_names(client: WorkspaceClient, folder: str) -> list[str] | None:
    """The names of the objects in ``folder``; ``None`` when it does not exist."""
    from databricks.sdk.errors import ResourceDoesNotExist

    try:
        items = list(client.workspace.list(folder))  # a generator: the request is sent here
    except ResourceDoesNotExist:
        return None
    return [(item.path or "").rsplit("/", 1)[-1] for item in items]


def export_bytes(client: WorkspaceClient, path: str) -> bytes | None:
    """The content of the workspace file ``path``; ``None`` when there is none."""
    from databricks.sdk.errors import ResourceDoesNotExist
    from databricks.sdk.service.workspace import ExportFormat

    try:
        exported = client.workspace.export(path, format=ExportFormat.AUTO)
    except ResourceDoesNotExist:
        return None
    return base64.b64decode(exported.content or "")


def create_file(
    client: WorkspaceClient, path: str, content: bytes, *, overwrite: bool = False
) -> None:
    """Create the workspace file ``path``, never replacing one (``overwrite``: replacing
    it, for a file one writer alone writes).

    ``import`` with ``overwrite: false`` onto an existing path answers
    ``RESOURCE_ALREADY_EXISTS`` (SDK docstring of ``WorkspaceAPI.import_``; REST reference
    https://docs.databricks.com/api/workspace/workspace/import): the create-if-absent the
    journal's fencing and the control ops' order rest on.

    Raises:
        databricks.sdk.errors.ResourceAlreadyExists: ``path`` exists (not ``overwrite``).
    """
    from databricks.sdk.service.workspace import ImportFormat

    client.workspace.import_(
        path,
        content=base64.b64encode(content).decode(),
        format=ImportFormat.AUTO,  # by the extension: a .json is a file (SDK docstring)
        overwrite=overwrite,
    )


def answer_of(exc: BaseException) -> Answer:
    """``unanswered``: the workspace did not answer (a dropped connection, a timeout, or
    429/503 until the SDK's retry budget ran out, which it raises as ``TimeoutError``);
    ``refused``: it rejected the credentials or a permission; ``other``: it answered."""
    import requests
    from databricks.sdk.errors import (
        PermissionDenied,
        TemporarilyUnavailable,
        TooManyRequests,
        Unauthenticated,
    )

    if isinstance(exc, TimeoutError | requests.ConnectionError | requests.Timeout):
        return "unanswered"
    if isinstance(exc, TemporarilyUnavailable | TooManyRequests):
        return "unanswered"
    if isinstance(exc, Unauthenticated | PermissionDenied):
        return "refused"
    return "other"


def workspace_problem(exc: BaseException, host: str | None, what: str) -> DbxdecError:
    """The one line for an SDK or transport failure while reading or writing ``what``."""
    answer, where = answer_of(exc), f"the workspace at {host}" if host else "the workspace"
    if answer == "unanswered":
        return WorkspaceUnreachable(
            f"cannot reach {where} for {what} ({one_line(exc)}): check the network (VPN, "
            "proxy), then run the command again"
        )
    if answer == "refused":
        return WorkspaceRejected(
            f"{where} refused access to {what} ({one_line(exc)}): these credentials need "
            f"CAN EDIT on the journals folder (or set {JOURNAL_DIR_ENV} to a folder they can "
            "write)"
        )
    return LocalStateProblem(f"{where} could not serve {what} ({one_line(exc)})")


@contextmanager
def reading(client: WorkspaceClient, what: str) -> Iterator[None]:
    """Turn the SDK's failures inside the block into one line about ``what``.

    Raises:
        WorkspaceUnreachable: no answer; WorkspaceRejected: refused;
        LocalStateProblem: any other answer, or a journal object that is not valid.
    """
    try:
        yield
    except DbxdecError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # a document missing its fields
        raise LocalStateProblem(f"{what} is damaged ({one_line(exc)})") from None
    except Exception as exc:
        raise workspace_problem(exc, client.config.host, what) from None
