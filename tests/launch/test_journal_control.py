"""Steering requests beside a journal: their order, the latest wins, collisions take
the next number; and the list of journals in the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.ledger.journal import (
    append_control,
    control_ops,
    create_journal,
    current_control,
    list_journals,
)
from databricks_bundle_decorators.launch.ledger.place import WorkspacePlace
from databricks_bundle_decorators.testing import JobsEmulator

from .test_journal import JOB_ID, client, emu, new_ledger

__all__ = ["client", "emu"]  # the fixtures


def test_control_ops_are_ordered_and_the_latest_wins(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    assert current_control(control_ops(client, JOB_ID, ledger.id)) == "running"
    for op in ("pause", "unpause", "pause", "cancel"):
        append_control(client, JOB_ID, ledger.id, op, by="ann@example.com", at=1.0)
        assert (
            current_control(control_ops(client, JOB_ID, ledger.id))
            == {
                "pause": "paused",
                "unpause": "running",
                "cancel": "cancelled",
            }[op]
        )
    emu.requests.clear()
    names_only = control_ops(client, JOB_ID, ledger.id, details=False)
    assert [(o.seq, o.op) for o in names_only] == [
        (1, "pause"),
        (2, "unpause"),
        (3, "pause"),
        (4, "cancel"),
    ]
    assert current_control(names_only) == "cancelled" and emu.requests["total"] == 1
    ops = control_ops(client, JOB_ID, ledger.id)
    assert [(o.seq, o.op, o.by) for o in ops] == [
        (1, "pause", "ann@example.com"),
        (2, "unpause", "ann@example.com"),
        (3, "pause", "ann@example.com"),
        (4, "cancel", "ann@example.com"),
    ]


def test_a_request_that_collides_takes_the_next_number(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    listed = WorkspacePlace.names
    raced: list[str] = []

    def bob_appends_right_after_ann_lists(place: WorkspacePlace) -> list[str]:
        names = listed(place)
        if place.folder.endswith("/control") and not raced:
            raced.append(place.folder)
            append_control(client, JOB_ID, ledger.id, "pause", by="bob@example.com")
        return names

    monkeypatch.setattr(WorkspacePlace, "names", bob_appends_right_after_ann_lists)
    emu.requests.clear()

    made = append_control(client, JOB_ID, ledger.id, "pause", by="ann@example.com")

    assert (made.seq, made.by) == (2, "ann@example.com")
    assert emu.requests["/api/2.0/workspace/import"] == 3  # bob's, ann's collision, ann's
    ops = control_ops(client, JOB_ID, ledger.id)
    assert [(o.seq, o.by) for o in ops] == [(1, "bob@example.com"), (2, "ann@example.com")]


def test_different_requests_at_one_number_resolve_to_the_stop(
    emu: JobsEmulator, client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    control = f"{ledger.path}/control"
    for op in ("cancel", "unpause"):  # appended at once from the same listing
        body = f'{{"format": 1, "op": "{op}", "by": "x", "at": 1}}'.encode()
        emu.put_workspace_file(f"{control}/000000001-{op}.json", body)
    assert current_control(control_ops(client, JOB_ID, ledger.id)) == "cancelled"


def test_a_request_names_one_of_three_ops_and_an_existing_journal(
    client: WorkspaceClient, tmp_path: Path
) -> None:
    ledger = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    with pytest.raises(UsageError, match=r"^'stop' is not a steering request: use pause"):
        append_control(client, JOB_ID, ledger.id, "stop", by="ann")
    with pytest.raises(UsageError, match=r"^no journal of backfill nightly-x in the workspace"):
        append_control(client, JOB_ID, "nightly-x", "pause", by="ann")
    with pytest.raises(UsageError, match="is not a backfill id"):
        append_control(client, JOB_ID, "../../etc", "pause", by="ann")


def test_list_journals_summarises_each_backfill(client: WorkspaceClient, tmp_path: Path) -> None:
    first = create_journal(client, new_ledger(tmp_path, 2), job_id=JOB_ID, writer="cli:test")
    second = new_ledger(tmp_path, 3)
    second.created_at = first.created_at + 1
    create_journal(client, second, job_id=JOB_ID, writer="cli:test")
    append_control(client, JOB_ID, second.id, "pause", by="ann")

    found = list_journals(client, {"nightly": JOB_ID, "other": JOB_ID + 1})

    assert [(s.backfill_id, s.paused, s.counts["pending"]) for s in found] == [
        (second.id, True, 3),
        (first.id, False, 2),
    ]
