"""The ledger: atomic writes, round trips, ids, tokens, listing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.atomic import write_atomically
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    attempt_token,
    ledger_observations,
    list_ledgers,
    load_ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice


def make(root: Path, n: int = 3) -> Ledger:
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"2024-01-0{i + 1}",)) for i in range(n)))
    return Ledger.create(
        root,
        plan,
        backend=BackendSpec("databricks", job_id=7, host="https://x.cloud.databricks.com"),
        options=LaunchOptions(max_concurrent=8, retries=2, params={"source": "s"}),
    )


def test_round_trip_keeps_plan_attempts_and_options(tmp_path: Path) -> None:
    ledger = make(tmp_path)
    first = ledger.slices[0]
    ledger.update(first.with_attempt(Attempt(1, "tok-1", "failed", "11", None, 1.0, 2.0, "boom")))
    ledger.update(ledger.slices[0].with_attempt(Attempt(2, "tok-2", "running", "12", None, 3.0)))
    ledger.save()

    loaded = load_ledger(tmp_path, ledger.id)
    assert loaded.to_json() == ledger.to_json()
    assert (
        ledger.path.suffix == ".sqlite" and read_ledger(ledger.path).to_json() == ledger.to_json()
    )
    assert [a.state for a in loaded.slices[0].attempts] == ["failed", "running"]
    assert loaded.slices[0].state == "running" and loaded.slices[1].state == "pending"
    assert loaded.options.params == {"source": "s"} and loaded.backend.job_id == 7
    assert loaded.counts()["running"] == 1 and loaded.counts()["pending"] == 2


def test_a_save_after_a_change_is_seen_by_a_reader_while_the_writer_stays_open(
    tmp_path: Path,
) -> None:
    ledger = make(tmp_path)
    ledger.save()
    ledger.update(ledger.slices[1].with_attempt(Attempt(1, "t", "running", "5", None, 1.0)))
    ledger.set_state("interrupted")
    ledger.save()  # the writer keeps its connection: a reader sees the commit all the same
    seen = read_ledger(ledger.path)
    assert seen.state == "interrupted" and seen.slices[1].state == "running"
    assert seen.to_json() == ledger.to_json() and not seen.dirty
    ledger.close()
    assert [p.name for p in ledger.path.parent.iterdir()] == [ledger.path.name]  # one file


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_atomically(target, "old")

    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("disk full")

    with pytest.raises(TypeError):
        write_atomically(target, Boom())  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["a.json"]


@given(
    backfill_id=st.from_regex(
        r"[a-z_][a-z0-9_\-]{0,99}-20240101T000000-[0-9a-f]{4}", fullmatch=True
    ),
    first=st.text(min_size=1, max_size=40),
    last=st.text(min_size=1, max_size=40),
    attempt=st.integers(min_value=1, max_value=10**6),
)
def test_tokens_are_short_deterministic_and_distinct(
    backfill_id: str, first: str, last: str, attempt: int
) -> None:
    token = attempt_token(backfill_id, (first, last), attempt)
    assert len(token) <= 64 and token == attempt_token(backfill_id, (first, last), attempt)
    assert token != attempt_token(backfill_id, (first, last), attempt + 1)
    assert token != attempt_token(backfill_id + "x", (first, last), attempt)


def test_unknown_and_malformed_ids_are_usage_errors(tmp_path: Path) -> None:
    ledger = make(tmp_path)
    ledger.save()
    with pytest.raises(UsageError, match=f"Did you mean '{ledger.id}'"):
        load_ledger(tmp_path, ledger.id[:-1] + "z")
    with pytest.raises(UsageError, match="is not a backfill id"):
        load_ledger(tmp_path, "../secrets")


def test_listing_skips_damaged_files_and_filters_by_job(tmp_path: Path) -> None:
    ledger = make(tmp_path)
    ledger.save()
    (ledger.path.parent / "broken.sqlite").write_text("{")
    assert [item.id for item in list_ledgers(tmp_path)] == [ledger.id]
    assert list_ledgers(tmp_path, "other") == []


def test_observations_from_ledgers(tmp_path: Path) -> None:
    ledger = make(tmp_path)
    ledger.update(ledger.slices[0].with_attempt(Attempt(1, "t", "succeeded", "1", None, 5.0, 6.0)))
    ledger.update(ledger.slices[1].with_attempt(Attempt(1, "t", "rejected", None, None, 5.0)))
    ledger.update(ledger.slices[2].with_attempt(Attempt(1, "t", "running", "3", None, 5.0)))
    ledger.set_state("interrupted")
    observed = {o.keys[0]: o.state for o in ledger_observations([ledger])}
    assert observed == {"2024-01-01": "succeeded", "2024-01-03": "failed"}  # not running any more
