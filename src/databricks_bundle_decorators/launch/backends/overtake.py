"""A repeatable call sent once more when slow: the Databricks client waits out a 429/503
(``Retry-After``), keeping a ``run-now``'s slot empty; sent again with the same
idempotency token it finds the same run. The threshold (``--resend-after``) is adaptive
by default, fixed, or never (``0``, for tests that count requests).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = ["Overtaker"]

T = TypeVar("T")

_SLOW = 3.0  # a call is sent again after this many times the usual latency
_LATENCIES = 32


class Overtaker:
    """Runs repeatable calls, each sent once more when slow (two copies at most); ``floor``:
    the adaptive threshold's least seconds; ``after``: a fixed one (``0``: never).
    """

    def __init__(
        self, *, floor: float = 0.1, after: float | None = None, workers: int = 64
    ) -> None:
        if after is not None and after < 0:
            raise ValueError(f"after must be 0 (never) or positive, not {after}")
        self.floor = floor
        self.fixed = after
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="dbxdec-overtake")
        self._latencies: deque[float] = deque(maxlen=_LATENCIES)
        self._lock = threading.Lock()

    def after(self) -> float | None:
        """Seconds a call may take before it is sent again (``None``: never)."""
        if self.fixed is not None:
            return self.fixed or None
        with self._lock:
            usual = statistics.median(self._latencies) if self._latencies else 0.0
        return max(self.floor, _SLOW * usual)

    def __call__(self, call: Callable[[], T]) -> T:
        """The first answer of ``call`` (sent again if slow); if every copy raised, the first
        copy's exception.
        """
        started = time.monotonic()
        first = self._pool.submit(call)
        copies = [first]
        after = self.after()
        if after is not None and not wait(copies, timeout=after)[0]:
            copies.append(self._pool.submit(call))
        while True:
            done, pending = wait(copies, return_when=FIRST_COMPLETED)
            answered = [f for f in done if f.exception() is None]
            if answered:
                with self._lock:
                    self._latencies.append(time.monotonic() - started)
                return answered[0].result()
            if not pending:
                return _raise(first)
            copies = list(pending)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _raise(future: Future[T]) -> T:
    return future.result()  # raises the call's exception
