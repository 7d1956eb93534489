"""A repeatable call sent once more when slow (a run-now held by a 429/503)."""

from __future__ import annotations

import threading

import pytest

from databricks_bundle_decorators.launch.backends import SubmitRequest
from databricks_bundle_decorators.launch.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.overtake import Overtaker
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
    overtaker = Overtaker(floor=0.01)
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
        assert calls == [0, 1]
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
