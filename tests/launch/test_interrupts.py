"""Ctrl-C escalation: drain, then cancel; SIGTERM cancels at once."""

from __future__ import annotations

import os
import signal

from databricks_bundle_decorators.launch.run.interrupts import CANCEL, DRAIN, Interrupts


def test_sigint_escalates_and_sigterm_cancels() -> None:
    seen: list[int] = []
    interrupts = Interrupts()
    interrupts.on_change(seen.append)
    before = signal.getsignal(signal.SIGINT)
    with interrupts.installed():
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupts.level == DRAIN and interrupts.wake.is_set()
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupts.level == CANCEL
    assert signal.getsignal(signal.SIGINT) is before
    assert seen == [DRAIN, CANCEL]

    term = Interrupts()
    with term.installed():
        os.kill(os.getpid(), signal.SIGTERM)
    assert term.level == CANCEL
