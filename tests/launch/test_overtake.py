"""A repeatable call sent once more when slow (a run-now held by a 429/503)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from databricks_bundle_decorators.launch.backends.backends import SubmitRequest
from databricks_bundle_decorators.launch.backends.databricks_backend import (
    DatabricksBackend,
    Overtaker,
)
from databricks_bundle_decorators.testing import JobsEmulator


def test_a_quick_call_is_sent_once() -> None:
    overtaker = Overtaker(floor=60.0)
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        return "run 1"

    try:
        assert overtaker(call) == "run 1"
        assert calls == [1]
    finally:
        overtaker.close()


def test_a_held_call_is_sent_again_and_the_first_answer_taken() -> None:
    overtaker = Overtaker(floor=0.01, copies=2)
    held = threading.Event()
    calls: list[int] = []

    def call() -> str:
        calls.append(len(calls))
        if len(calls) == 1:
            held.wait()  # the first copy waits out a throttle
            return "late"
        return "run 7"

    try:
        assert overtaker(call) == "run 7"
        assert calls == [0, 1]  # two copies at most here
    finally:
        held.set()
        overtaker.close()


def test_a_call_slow_twice_is_sent_a_third_time() -> None:
    overtaker = Overtaker(floor=0.01)  # three copies at most by default
    held = threading.Event()
    calls: list[int] = []

    def call() -> str:
        calls.append(len(calls))
        if len(calls) < 3:
            held.wait()  # two copies wait out a throttle
            return "late"
        return "run 7"

    try:
        assert overtaker(call) == "run 7"
        assert calls == [0, 1, 2]
    finally:
        held.set()
        overtaker.close()


def test_when_every_copy_fails_the_first_copys_error_is_raised() -> None:
    overtaker = Overtaker(floor=0.01)
    held = threading.Event()
    calls: list[int] = []

    def call() -> str:
        calls.append(len(calls))
        if len(calls) == 1:
            held.wait()
            raise RuntimeError("first")
        held.set()
        raise RuntimeError("second")

    try:
        with pytest.raises(RuntimeError, match="first"):
            overtaker(call)
        assert calls == [0, 1]
    finally:
        overtaker.close()


def test_run_nows_held_by_throttling_make_one_run_each(emu: JobsEmulator) -> None:
    """Half the requests answered 429: a run-now sent again finds its run by its token."""
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    emu.set_faults(error_rate=0.5, seed=3)
    try:
        keys = [f"2024-01-0{day}" for day in range(1, 6)]
        submitted = [
            backend.submit(SubmitRequest(f"token-{key}", {"backfill_key": key}, key))
            for key in keys
        ]
    finally:
        emu.set_faults()
        backend.close()
    runs = emu.runs(job_id)
    assert sorted(r.run_id for r in runs) == sorted(int(s.run_id) for s in submitted)


RUN_NOW = "/api/2.2/jobs/run-now"


def test_a_run_now_held_by_the_emulator_is_sent_again_and_makes_one_run(
    emu: JobsEmulator,
) -> None:
    """Slow by construction, not by chance: the first copy is held until released."""
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
    backend = DatabricksBackend(emu.workspace_client(), job_id, resend_after=0.01)
    emu.block_submissions(first=1)  # the first run-now waits; the copy goes through
    try:
        submitted = backend.submit(SubmitRequest("token-a", {"backfill_key": "a"}, "a"))
        assert emu.blocked_submissions == 1  # answered while the first copy is still held
    finally:
        emu.unblock_submissions()
        backend.close()
    emu.wait_for_run_now_bodies(2, job_id=job_id)  # the held copy, applied once released
    (run,) = emu.runs(job_id)
    assert str(run.run_id) == submitted.run_id
    tokens = [body["idempotency_token"] for body in emu.run_now_bodies(job_id)]
    # the held copy and the one answered; on a loaded machine the answered copy may itself
    # take over 0.01 s, and a third goes out (three copies at most), with the same token
    assert set(tokens) == {"token-a"} and 2 <= len(tokens) <= 3, tokens


def test_resend_after_0_never_sends_a_held_run_now_again(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
    backend = DatabricksBackend(emu.workspace_client(), job_id, resend_after=0)
    emu.block_submissions(first=1)
    try:
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(
                backend.submit, SubmitRequest("token-a", {"backfill_key": "a"}, "a")
            )
            emu.wait_for_blocked_submissions(1)
            emu.unblock_submissions()
            submitted = answer.result(timeout=60)
    finally:
        emu.unblock_submissions()
        backend.close()
    assert emu.requests[RUN_NOW] == 1  # held, answered late, never sent again
    assert [str(r.run_id) for r in emu.runs(job_id)] == [submitted.run_id]


def test_an_overtaker_with_a_fixed_threshold_ignores_latency() -> None:
    never = Overtaker(after=0)
    fixed = Overtaker(after=2.5)
    try:
        assert never.after() is None
        assert fixed.after() == 2.5
        assert Overtaker(floor=0.3).after() == 0.3  # adaptive: nothing learnt yet
        with pytest.raises(ValueError, match="after must be 0"):
            Overtaker(after=-1)
    finally:
        never.close()
        fixed.close()
