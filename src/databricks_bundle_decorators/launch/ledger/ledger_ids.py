"""The names a backfill ledger gives: backfill ids and the idempotency token of each
attempt (both re-exported by :mod:`.ledger`)."""

from __future__ import annotations

import hashlib
import secrets
import time


def new_backfill_id(job: str, *, now: float | None = None) -> str:
    """A unique, sortable id: ``<job>-<UTC yyyymmddThhmmss>-<4 hex>``."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{job}-{stamp}-{secrets.token_hex(2)}"


def attempt_token(backfill_id: str, keys: tuple[str, ...], attempt: int) -> str:
    """The idempotency token of one attempt of one slice (at most 64 characters).

    Derived, not random: the same backfill, keys and attempt always give the same
    token, so a re-submission after a crash cannot create a second run.
    """
    material = "\0".join((backfill_id, keys[0] if keys else "", keys[-1] if keys else ""))
    digest = hashlib.sha256(f"{material}\0{attempt}".encode()).hexdigest()
    return f"dbxdec-{digest[:40]}-{attempt}"
