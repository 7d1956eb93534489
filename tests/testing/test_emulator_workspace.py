"""The emulator's Workspace API (files and folders), through the real WorkspaceClient."""

from __future__ import annotations

import base64
import threading

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import (
    BadRequest,
    DatabricksError,
    ResourceAlreadyExists,
    ResourceDoesNotExist,
    Unauthenticated,
)
from databricks.sdk.service.workspace import ExportFormat, ImportFormat, Language, ObjectType

from databricks_bundle_decorators.testing import JobsEmulator

FOLDER = "/Shared/dbxdec/claims"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_import_without_overwrite_creates_once_then_says_already_exists(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs(FOLDER)
    path = f"{FOLDER}/job-1.json"
    w.workspace.import_(path, content=b64(b'{"a": 1}'), format=ImportFormat.AUTO, overwrite=False)

    with pytest.raises(ResourceAlreadyExists, match="already exists") as refused:
        w.workspace.import_(path, content=b64(b"{}"), format=ImportFormat.AUTO, overwrite=False)
    assert refused.value.error_code == "RESOURCE_ALREADY_EXISTS"
    assert emu.workspace_files(FOLDER) == {path: b'{"a": 1}'}  # the first content stays

    w.workspace.import_(path, content=b64(b'{"a": 2}'), format=ImportFormat.RAW, overwrite=True)
    assert emu.workspace_files(FOLDER) == {path: b'{"a": 2}'}


def test_multipart_upload_and_raw_download_round_trip(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs(FOLDER)
    path = f"{FOLDER}/notes.txt"
    w.workspace.upload(path, b"first\n", format=ImportFormat.AUTO)
    with pytest.raises(ResourceAlreadyExists):
        w.workspace.upload(path, b"second\n", format=ImportFormat.AUTO)
    w.workspace.upload(path, b"second\n", format=ImportFormat.AUTO, overwrite=True)

    assert w.workspace.download(path).read() == b"second\n"
    exported = w.workspace.export(path, format=ExportFormat.AUTO)
    assert exported.content is not None and base64.b64decode(exported.content) == b"second\n"
    assert exported.file_type == "txt"


def test_import_into_a_missing_folder_is_not_found_and_creates_nothing(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    with pytest.raises(ResourceDoesNotExist, match=r"parent folder \(/Shared/nope\) does not"):
        w.workspace.import_("/Shared/nope/x.json", content=b64(b"{}"), format=ImportFormat.AUTO)
    assert emu.workspace_files() == {}
    with pytest.raises(ResourceDoesNotExist):
        w.workspace.get_status("/Shared/nope")


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda w: w.workspace.get_status("/Shared/gone.json"), id="get-status"),
        pytest.param(lambda w: w.workspace.export("/Shared/gone.json"), id="export"),
        pytest.param(lambda w: w.workspace.download("/Shared/gone.json"), id="download"),
        pytest.param(lambda w: w.workspace.delete("/Shared/gone.json"), id="delete"),
        pytest.param(lambda w: list(w.workspace.list("/Shared/gone.json")), id="list"),
    ],
)
def test_a_missing_path_is_resource_does_not_exist(w: WorkspaceClient, call: object) -> None:
    with pytest.raises(ResourceDoesNotExist, match=r"Path \(/Shared/gone.json\) doesn't exist"):
        call(w)  # type: ignore[operator]


def test_get_status_and_list_describe_files_and_folders(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs(f"{FOLDER}/job-7")  # every missing parent too
    for name in ("b.json", "a.json"):
        w.workspace.import_(
            f"{FOLDER}/job-7/{name}", content=b64(b"12345"), format=ImportFormat.AUTO
        )

    folder = w.workspace.get_status(f"{FOLDER}/job-7")
    assert folder.object_type == ObjectType.DIRECTORY and folder.path == f"{FOLDER}/job-7"
    info = w.workspace.get_status(f"{FOLDER}/job-7/a.json")
    assert (info.object_type, info.size) == (ObjectType.FILE, 5)
    assert [o.path for o in w.workspace.list(f"{FOLDER}/job-7")] == [
        f"{FOLDER}/job-7/a.json",
        f"{FOLDER}/job-7/b.json",
    ]
    assert [o.path for o in w.workspace.list(FOLDER)] == [f"{FOLDER}/job-7"]
    w.workspace.mkdirs(f"{FOLDER}/empty")
    assert list(w.workspace.list(f"{FOLDER}/empty")) == []
    w.workspace.mkdirs(FOLDER)  # an existing folder: nothing happens


def test_the_workspace_prefix_names_the_same_objects(emu: JobsEmulator, w: WorkspaceClient) -> None:
    w.workspace.mkdirs(f"/Workspace{FOLDER}")
    w.workspace.import_(f"/Workspace{FOLDER}/x.json", content=b64(b"1"), format=ImportFormat.AUTO)
    assert emu.workspace_files() == {f"{FOLDER}/x.json": b"1"}
    assert w.workspace.get_status(f"{FOLDER}/x.json").path == f"{FOLDER}/x.json"


def test_delete_removes_files_and_refuses_a_folder_that_is_not_empty(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs(FOLDER)
    w.workspace.import_(f"{FOLDER}/x.json", content=b64(b"1"), format=ImportFormat.AUTO)

    with pytest.raises(BadRequest, match=r"Folder \(/Shared/dbxdec\) is not empty") as refused:
        w.workspace.delete("/Shared/dbxdec")
    assert refused.value.error_code == "DIRECTORY_NOT_EMPTY"
    w.workspace.delete(f"{FOLDER}/x.json")
    assert emu.workspace_files() == {}
    with pytest.raises(ResourceDoesNotExist):
        w.workspace.delete(f"{FOLDER}/x.json")  # deleted once only
    w.workspace.import_(f"{FOLDER}/y.json", content=b64(b"1"), format=ImportFormat.AUTO)
    w.workspace.delete("/Shared/dbxdec", recursive=True)
    with pytest.raises(ResourceDoesNotExist):
        w.workspace.get_status(FOLDER)


def test_mkdirs_through_a_file_is_already_exists(w: WorkspaceClient) -> None:
    w.workspace.import_("/Shared/file", content=b64(b"1"), format=ImportFormat.AUTO)
    with pytest.raises(ResourceAlreadyExists, match="/Shared/file is an existing file"):
        w.workspace.mkdirs("/Shared/file/below")


def test_notebooks_by_language_or_by_header(emu: JobsEmulator, w: WorkspaceClient) -> None:
    home = "/Users/emulator@example.com"
    w.workspace.import_(
        f"{home}/etl",
        content=b64(b"print(1)\n"),
        format=ImportFormat.SOURCE,
        language=Language.PYTHON,
    )
    w.workspace.upload(
        f"{home}/auto.py", b"# Databricks notebook source\nprint(2)\n", format=ImportFormat.AUTO
    )
    w.workspace.upload(f"{home}/plain.py", b"print(3)\n", format=ImportFormat.AUTO)

    kinds = {o.path: (o.object_type, o.language) for o in w.workspace.list(home)}
    assert kinds == {
        f"{home}/auto": (ObjectType.NOTEBOOK, Language.PYTHON),  # extension dropped
        f"{home}/etl": (ObjectType.NOTEBOOK, Language.PYTHON),
        f"{home}/plain.py": (ObjectType.FILE, None),
    }
    with pytest.raises(DatabricksError, match="language field is required"):
        w.workspace.import_(f"{home}/x", content=b64(b"1"), format=ImportFormat.SOURCE)


def test_bad_content_and_paths_are_invalid_parameter_values(w: WorkspaceClient) -> None:
    with pytest.raises(DatabricksError, match="not valid base64") as bad:
        w.workspace.import_("/Shared/x", content="***", format=ImportFormat.AUTO)
    assert bad.value.error_code == "INVALID_PARAMETER_VALUE"
    with pytest.raises(DatabricksError, match="is not absolute"):
        w.workspace.get_status("Shared/x")


def test_the_token_is_checked(emu: JobsEmulator) -> None:
    with JobsEmulator(token="dapi-right") as guarded:
        wrong = WorkspaceClient(host=guarded.url, token="dapi-wrong", auth_type="pat")
        with pytest.raises(Unauthenticated):
            wrong.workspace.mkdirs("/Shared/x")
        guarded.workspace_client().workspace.mkdirs("/Shared/x")
        assert guarded.workspace_client().workspace.get_status("/Shared/x").path == "/Shared/x"


def test_put_workspace_file_is_what_the_api_then_reads(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    emu.put_workspace_file(f"{FOLDER}/job-3/seeded.json", b'{"x": 1}')
    assert w.workspace.download(f"{FOLDER}/job-3/seeded.json").read() == b'{"x": 1}'


def test_the_10_mb_import_limit_applies_to_the_base64_text(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs("/Shared/big")
    under_in_bytes = b"x" * (8 * 1024 * 1024)  # 8 MB of bytes, 10.7 MB of base64
    with pytest.raises(DatabricksError, match="too large") as refused:
        w.workspace.import_(
            "/Shared/big/a.json", content=b64(under_in_bytes), format=ImportFormat.AUTO
        )
    assert refused.value.error_code == "MAX_NOTEBOOK_SIZE_EXCEEDED"
    assert emu.workspace_files("/Shared/big") == {}


def test_a_held_request_is_applied_only_once_released(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    w.workspace.mkdirs(FOLDER)
    held, other = f"{FOLDER}/held.json", f"{FOLDER}/other.json"
    emu.hold_requests(lambda method, path, body: body.get("path") == held)
    writer = threading.Thread(
        target=w.workspace.import_,
        args=(held,),
        kwargs={"content": b64(b"1"), "format": ImportFormat.AUTO, "overwrite": False},
    )
    writer.start()
    emu.wait_for_held_requests(1)
    w.workspace.import_(other, content=b64(b"2"), format=ImportFormat.AUTO)  # not picked
    assert emu.workspace_files(FOLDER) == {other: b"2"}  # the held create is not applied
    emu.release_requests()
    writer.join(timeout=30)
    assert emu.workspace_files(FOLDER) == {other: b"2", held: b"1"}
