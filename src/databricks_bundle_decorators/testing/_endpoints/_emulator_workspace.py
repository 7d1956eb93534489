"""The emulated Workspace API (``/api/2.0/workspace/*``): folders, files and notebooks.

``get-status``, ``import`` (JSON with base64 ``content``, or the multipart form
``WorkspaceClient.workspace.upload`` posts), ``export`` (JSON, or raw bytes with
``direct_download=true``), ``list``, ``mkdirs`` and ``delete``, as the SDK docstrings of
``WorkspaceAPI`` and https://docs.databricks.com/api/workspace/workspace describe them
(``import_``: "If ``path`` already exists and ``overwrite`` is set to ``false``, this call
returns an error ``RESOURCE_ALREADY_EXISTS``"). ``import`` never creates parents (404
``RESOURCE_DOES_NOT_EXIST``); ``AUTO`` makes a notebook of a source starting with the
notebook header (dropping the extension), ``SOURCE`` needs ``language``. A missing path
is 404 ``RESOURCE_DOES_NOT_EXIST``; deleting a non-empty folder without ``recursive``
400 ``DIRECTORY_NOT_EMPTY``; ``mkdirs`` creates parents. ``/Workspace/...`` names the same
object as ``/...``. ``import``'s ``content`` "has a limit of 10 MB" (SDK docstring of
``WorkspaceAPI.import_``; "The maximum allowed size of a request to the Workspace API is
10MB", https://docs.databricks.com/dev-tools/api/latest/workspace.html): applied to the
base64 text, the stricter reading. ``list`` answers every child at once (SDK
``WorkspaceAPI.list``: one request per folder, no page token). Not modelled: permissions,
archives, exporting a folder. The emulator holds its lock around every call.
"""

from __future__ import annotations

import base64
import binascii
import email.parser
import email.policy
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._store._emulator_records import ApiError, JsonDict, invalid, opt_bool

WORKSPACE_PREFIX = "/api/2.0/workspace/"
MAX_IMPORT_BYTES = 10 * 1024 * 1024  # the real service's import limit
ENDPOINTS = frozenset(
    {
        ("GET", "get-status"),
        ("GET", "export"),
        ("GET", "list"),
        ("POST", "import"),
        ("POST", "mkdirs"),
        ("POST", "delete"),
    }
)
_NOTEBOOK_HEADERS = {
    ".py": ("PYTHON", b"# Databricks notebook source"),
    ".sql": ("SQL", b"-- Databricks notebook source"),
    ".scala": ("SCALA", b"// Databricks notebook source"),
    ".r": ("R", b"# Databricks notebook source"),
}
_LANGUAGES = frozenset({"PYTHON", "SQL", "SCALA", "R"})
_FORMATS = frozenset({"AUTO", "RAW", "SOURCE", "DBC", "HTML", "JUPYTER", "R_MARKDOWN"})


@dataclass
class WorkspaceObject:
    """A folder, file or notebook; ``content`` is empty for a folder."""

    path: str
    object_type: str  # DIRECTORY, FILE or NOTEBOOK
    object_id: int
    created_at: int
    modified_at: int
    content: bytes = b""
    language: str | None = None

    def info(self) -> JsonDict:
        """The ``ObjectInfo`` JSON of ``get-status`` and ``list``."""
        info: JsonDict = {
            "object_type": self.object_type,
            "path": self.path,
            "object_id": self.object_id,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "resource_id": str(self.object_id),
        }
        if self.object_type != "DIRECTORY":
            info["size"] = len(self.content)
        if self.language is not None:
            info["language"] = self.language
        return info


def parse_form(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name (their raw bytes)."""
    header = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + body)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = payload
    return fields


def _missing(path: str) -> ApiError:
    return ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Path ({path}) doesn't exist.")


def _text(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if isinstance(value, bytes):
        return value.decode()
    return None if value is None else str(value)


class WorkspaceModel:
    """The workspace tree: ``/``, ``/Shared`` and the user's home exist from the start;
    ``now_ms`` is the clock of ``created_at``/``modified_at``."""

    def __init__(self, now_ms: Callable[[], int], user_name: str) -> None:
        self._now_ms = now_ms
        self._objects: dict[str, WorkspaceObject] = {}
        self._next_id = 1_000_000_001
        for folder in ("/", "/Shared", "/Users", f"/Users/{user_name}"):
            self._add(folder, "DIRECTORY")

    def files(self, under: str = "/") -> dict[str, bytes]:
        """Every file and notebook under ``under``, path -> content."""
        top = self._path(under)
        return {
            p: o.content
            for p, o in sorted(self._objects.items())
            if o.object_type != "DIRECTORY" and (p == top or p.startswith(top.rstrip("/") + "/"))
        }

    def put(self, path: str, content: bytes) -> None:
        """Write a file, creating its folders (a test's set-up, not an API call)."""
        path = self._path(path)
        self.mkdirs({"path": posixpath.dirname(path)})
        self._store(path, "FILE", content, None, overwrite=True)

    def handle(self, method: str, endpoint: str, params: Mapping[str, Any]) -> JsonDict | bytes:
        """Answer one request of :data:`ENDPOINTS`; ``bytes`` is a raw body
        (``export?direct_download=true``). Raises :class:`ApiError`."""
        handlers: dict[str, Callable[[Mapping[str, Any]], JsonDict | bytes]] = {
            "get-status": self.get_status,
            "export": self.export,
            "list": self.list_objects,
            "import": self.import_,
            "mkdirs": self.mkdirs,
            "delete": self.delete,
        }
        return handlers[endpoint](params)

    def get_status(self, params: Mapping[str, Any]) -> JsonDict:
        return self._get(self._required_path(params)).info()

    def list_objects(self, params: Mapping[str, Any]) -> JsonDict:
        found = self._get(self._required_path(params))
        if found.object_type != "DIRECTORY":
            return {"objects": [found.info()]}
        children = [o.info() for o in self._children(found.path)]
        return {"objects": children} if children else {}

    def mkdirs(self, params: Mapping[str, Any]) -> JsonDict:
        path = self._required_path(params)
        walked = "/"
        for part in [p for p in path.split("/") if p]:
            walked = posixpath.join(walked, part)
            existing = self._objects.get(walked)
            if existing is None:
                self._add(walked, "DIRECTORY")
            elif existing.object_type != "DIRECTORY":
                raise ApiError(
                    400,
                    "RESOURCE_ALREADY_EXISTS",
                    f"Cannot create directory {path} because {walked} is an existing file.",
                )
        return {}

    def delete(self, params: Mapping[str, Any]) -> JsonDict:
        path = self._required_path(params)
        found = self._get(path)
        if path == "/":
            raise invalid("Cannot delete the root folder.")
        children = self._children(path) if found.object_type == "DIRECTORY" else []
        if children and not opt_bool(params, "recursive"):
            raise ApiError(400, "DIRECTORY_NOT_EMPTY", f"Folder ({path}) is not empty.")
        for gone in [p for p in self._objects if p == path or p.startswith(path + "/")]:
            del self._objects[gone]
        return {}

    def import_(self, params: Mapping[str, Any]) -> JsonDict:
        path = self._required_path(params)
        fmt = _text(params, "format") or "SOURCE"
        language = _text(params, "language")
        if fmt not in _FORMATS:
            raise invalid(f"Invalid value for format: {fmt!r}")
        if language is not None and language not in _LANGUAGES:
            raise invalid(f"Invalid value for language: {language!r}")
        content = self._content(params)
        object_type, stored_as = "FILE", path
        if fmt == "SOURCE":
            if language is None:
                raise invalid("The language field is required to import a file as SOURCE.")
            object_type = "NOTEBOOK"
        elif fmt == "AUTO":
            root, ext = posixpath.splitext(path)
            header = _NOTEBOOK_HEADERS.get(ext.lower())
            if header is not None and content.lstrip().startswith(header[1]):
                object_type, stored_as, language = "NOTEBOOK", root, header[0]
        elif fmt != "RAW":
            raise invalid(f"The emulator does not import {fmt} content.")
        self._store(
            stored_as,
            object_type,
            content,
            language if object_type == "NOTEBOOK" else None,
            overwrite=opt_bool(params, "overwrite"),
        )
        return {}

    def export(self, params: Mapping[str, Any]) -> JsonDict | bytes:
        path = self._required_path(params)
        found = self._get(path)
        if found.object_type == "DIRECTORY":
            raise invalid(f"The emulator does not export folders ({path}).")
        if opt_bool(params, "direct_download"):
            return found.content
        file_type = posixpath.splitext(path)[1].lstrip(".")
        if found.language is not None:
            file_type = {"PYTHON": "py", "SQL": "sql", "SCALA": "scala", "R": "r"}[found.language]
        return {"content": base64.b64encode(found.content).decode(), "file_type": file_type}

    def _path(self, raw: str) -> str:
        if not raw.startswith("/"):
            raise invalid(f"Path ({raw}) is not absolute.")
        path = posixpath.normpath(raw)
        path = "/" + path.lstrip("/")  # normpath keeps a leading "//"
        if path == "/Workspace" or path.startswith("/Workspace/"):
            path = path[len("/Workspace") :] or "/"
        return path

    def _required_path(self, params: Mapping[str, Any]) -> str:
        raw = _text(params, "path")
        if not raw:
            raise invalid("Missing required field: path")
        return self._path(raw)

    def _get(self, path: str) -> WorkspaceObject:
        found = self._objects.get(path)
        if found is None:
            raise _missing(path)
        return found

    def _children(self, folder: str) -> list[WorkspaceObject]:
        prefix = folder.rstrip("/") + "/"
        return [
            o
            for p, o in sorted(self._objects.items())
            if p != folder and p.startswith(prefix) and "/" not in p[len(prefix) :]
        ]

    def _content(self, params: Mapping[str, Any]) -> bytes:
        raw = params.get("content")
        too_large = ApiError(
            400, "MAX_NOTEBOOK_SIZE_EXCEEDED", "File size imported is (over 10 MB) too large."
        )
        if isinstance(raw, str) and len(raw) > MAX_IMPORT_BYTES:  # the base64 text's limit
            raise too_large
        if isinstance(raw, bytes):  # a multipart upload: the file's own bytes
            content = raw
        elif raw is None or raw == "":
            content = b""
        else:
            try:
                content = base64.b64decode(str(raw), validate=True)
            except (binascii.Error, ValueError):
                raise invalid("The content field is not valid base64.") from None
        if len(content) > MAX_IMPORT_BYTES:
            raise too_large
        return content

    def _store(
        self, path: str, object_type: str, content: bytes, language: str | None, *, overwrite: bool
    ) -> None:
        parent = posixpath.dirname(path)
        folder = self._objects.get(parent)
        if folder is None or folder.object_type != "DIRECTORY":
            raise ApiError(
                404, "RESOURCE_DOES_NOT_EXIST", f"The parent folder ({parent}) does not exist."
            )
        existing = self._objects.get(path)
        if existing is not None and (not overwrite or existing.object_type == "DIRECTORY"):
            raise ApiError(
                400,
                "RESOURCE_ALREADY_EXISTS",
                f"Node named '{posixpath.basename(path)}' already exists",
            )
        if existing is None:
            self._add(path, object_type, content, language)
            return
        existing.object_type, existing.content, existing.language = object_type, content, language
        existing.modified_at = self._now_ms()

    def _add(
        self, path: str, object_type: str, content: bytes = b"", language: str | None = None
    ) -> None:
        now = self._now_ms()
        self._objects[path] = WorkspaceObject(
            path, object_type, self._next_id, now, now, content, language
        )
        self._next_id += 1
