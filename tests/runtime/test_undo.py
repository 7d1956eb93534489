"""Which commits are a backfill's and what undo does to a table, from a history alone
(no Spark: the histories are written out; tests/launch/test_undo.py reads real ones)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from databricks_bundle_decorators.runtime.io.spark_table import commit_identity
from databricks_bundle_decorators.runtime.programs.undo import BackfillRuns, plan_table
from databricks_bundle_decorators.runtime.storage.delta_history import Commit, _missing_files
from databricks_bundle_decorators.runtime.storage.formats import TableRef

RUNS = BackfillRuns("sales-20240601T120000-1a2b", "sales", frozenset({"5501", "20240601T1-ab"}))
TABLE = TableRef("main.s.t", "`main`.`s`.`t`")
OURS = commit_identity("sales", "clean", "5501-0")
MINE_TOO = commit_identity("sales", "totals", "20240601T1-ab")
OTHER = commit_identity("sales", "clean", "5600-0")
UNDONE = "an undo"  # the RESTORE at version 2 that the ledger records (see below)


@pytest.mark.parametrize(
    ("metadata", "ours"),
    [
        pytest.param(OURS, True, id="databricks-run-with-repair-count"),
        pytest.param(commit_identity("sales", "clean", "5501-3"), True, id="repaired-run"),
        pytest.param(MINE_TOO, True, id="local-run-id"),
        pytest.param(commit_identity("sales", "clean", "5501"), True, id="exact-id"),
        pytest.param(OTHER, False, id="another-run"),
        pytest.param(commit_identity("sales", "clean", "55010"), False, id="longer-id"),
        pytest.param(commit_identity("sales", "clean", "5501-x"), False, id="not-a-repair"),
        pytest.param(commit_identity("orders", "clean", "5501-0"), False, id="another-job"),
        pytest.param("5501", False, id="not-dbxdec"),
        pytest.param(None, False, id="no-metadata"),
    ],
)
def test_a_commit_is_the_backfill_s_when_its_metadata_names_one_of_its_runs(
    metadata: str | None, ours: bool
) -> None:
    assert RUNS.wrote(metadata) is ours


def history(*metadata: str | None) -> list[Commit]:
    return [Commit(v, "WRITE", m, "2024-06-01 12:00:00Z") for v, m in enumerate(metadata)]


def test_restore_goes_to_the_version_before_the_first_commit_of_the_backfill() -> None:
    undo = plan_table(TABLE, ("clean",), history(OTHER, OURS, MINE_TOO), RUNS)
    assert (undo.action, undo.current, undo.to_version) == ("restore", 2, 0)
    assert [c.version for c in undo.ours] == [1, 2] and undo.others == ()
    assert undo.refusal() is None
    assert undo.describe() == (
        "main.s.t: restore version 2 to version 0 (undoes 2 commits of this backfill, versions 1-2)"
    )


def test_a_later_writer_is_named_in_the_refusal() -> None:
    undo = plan_table(TABLE, ("clean",), history(OTHER, OURS, OTHER, None, MINE_TOO), RUNS)
    assert (undo.action, undo.to_version) == ("restore", 0)
    assert [c.version for c in undo.others] == [2, 3]
    assert undo.refusal() == (
        "table main.s.t: version 2 (WRITE at 2024-06-01 12:00:00Z by "
        "'dbxdec:sales:clean:5600-0') and 1 more were committed by other writers after this "
        "backfill's first write (version 1); undo would discard them too"
    )
    assert "also discards 2 commits by other writers: version 2 (" in undo.describe()


def test_a_table_the_backfill_created_has_no_earlier_version() -> None:
    undo = plan_table(TABLE, ("clean",), history(OURS, MINE_TOO), RUNS)
    assert (undo.action, undo.to_version) == ("empty", None)
    assert "was created by this backfill (version 0 is its first write)" in (undo.refusal() or "")


def test_after_an_undo_only_later_commits_of_the_backfill_count() -> None:
    """Setup: the undo is a RESTORE commit at a version the ledger recorded (the marker
    commits of unpublished releases are no longer read)."""
    runs = replace(RUNS, undone=frozenset({("main.s.t", 2)}))

    def with_restore(*metadata: str | None) -> list[Commit]:
        return [
            replace(c, operation="RESTORE") if c.version == 2 else c for c in history(*metadata)
        ]

    done = plan_table(TABLE, ("clean",), with_restore(OTHER, OURS, UNDONE), runs)
    assert (done.action, done.current) == ("done", 2)
    again = plan_table(TABLE, ("clean",), with_restore(OTHER, OURS, UNDONE, OTHER, OURS), runs)
    assert (again.action, again.to_version) == ("restore", 3)
    assert [c.version for c in again.ours] == [4]


@pytest.mark.parametrize(
    ("commits", "current"),
    [pytest.param([], None, id="missing-table"), pytest.param(history(OTHER), 0, id="not-ours")],
)
def test_nothing_to_undo(commits: list[Commit], current: int | None) -> None:
    undo = plan_table(TABLE, ("clean",), commits, RUNS)
    assert (undo.action, undo.current, undo.refusal()) == ("none", current, None)


def test_maintenance_commits_are_no_other_writer() -> None:
    """OPTIMIZE, VACUUM and statistics (predictive optimization runs them by itself)."""
    commits = history(OTHER, OURS, None, None, None, MINE_TOO)
    commits[2:5] = [
        Commit(2, "OPTIMIZE"),
        Commit(3, "VACUUM START"),
        Commit(4, "VACUUM END"),
    ]
    undo = plan_table(TABLE, ("clean",), commits, RUNS)
    assert (undo.action, undo.to_version, undo.others) == ("restore", 0, ())
    assert undo.refusal() is None
    changed = plan_table(TABLE, ("clean",), [*commits, Commit(6, "DELETE")], RUNS)
    assert [c.version for c in changed.others] == [6]


def test_a_restore_recorded_in_the_ledger_is_the_backfill_s_undo() -> None:
    runs = BackfillRuns(RUNS.backfill_id, RUNS.job, RUNS.run_ids, frozenset({("main.s.t", 2)}))
    commits = [*history(OTHER, OURS), Commit(2, "RESTORE")]
    assert plan_table(TABLE, ("clean",), commits, runs).action == "done"
    # the same version of another table, or a write at that version, is not
    assert plan_table(TABLE, ("clean",), commits, RUNS).action == "restore"
    written = [*history(OTHER, OURS), Commit(2, "WRITE")]
    assert plan_table(TABLE, ("clean",), written, runs).action == "restore"


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        pytest.param(
            "Can not restore table to version 0 because some files referenced in it are "
            "missing. Missed files (top 100 files): part-0.parquet Please use more recent "
            "version or timestamp for restoring. To disable check update option "
            "spark.sql.files.ignoreMissingFiles",
            True,
            id="open-source-delta",
        ),
        pytest.param("java.io.FileNotFoundException: part-0.parquet", True, id="file-read"),
        pytest.param("[DELTA_CANNOT_RESTORE_TABLE_VERSION] Cannot restore", False, id="version"),
    ],
)
def test_a_restore_refused_for_vacuumed_files_is_told_from_other_refusals(
    text: str, missing: bool
) -> None:
    assert _missing_files(text) is missing
