"""What the status page says about a key besides its state: the latest run recorded for
it in the local backfill ledgers (run id, run page, error, backfill id).

The ledgers know every run dbxdec launched from this project; runs started elsewhere
(a schedule, the Jobs UI) have no details here, and their cells show the state alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..ledger.ledger import Ledger


@dataclass(frozen=True, slots=True)
class KeyDetail:
    """The latest recorded run of a key.

    Attributes:
        state: ``succeeded``, ``failed``, ``cancelled`` or ``running`` (the attempt's end).
        run_id: The backend's run id.
        url: The run page (Databricks), when known.
        error: The run's error message.
        backfill_id: The backfill that launched it.
        checks_off: The run skipped its checks (``dbxdec backfill --no-checks``).
    """

    state: str
    run_id: str | None = None
    url: str | None = None
    error: str = ""
    backfill_id: str = ""
    checks_off: bool = False


def run_page_url(host: str | None, job_id: int | None, run_id: str | None) -> str | None:
    """The Databricks run page of ``run_id``, when host, job and run are known.

    >>> run_page_url("https://adb-1.azuredatabricks.net/", 1001, "95")
    'https://adb-1.azuredatabricks.net/jobs/1001/runs/95'
    >>> run_page_url(None, 1001, "95") is None
    True
    """
    if not host or job_id is None or not run_id:
        return None
    return f"{host.rstrip('/')}/jobs/{job_id}/runs/{run_id}"


def ledger_details(ledgers: Iterable[Ledger]) -> dict[str, KeyDetail]:
    """The latest attempt of every key in ``ledgers`` (rejected submissions, which
    started no run, are skipped)."""
    latest: dict[str, tuple[float, KeyDetail]] = {}
    for ledger in ledgers:
        backend = ledger.backend
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected":
                    continue
                started = attempt.submitted_at or ledger.created_at
                url = attempt.url
                if url is None and backend.kind == "databricks":
                    url = run_page_url(backend.host, backend.job_id, attempt.run_id)
                detail = KeyDetail(
                    attempt.state,
                    attempt.run_id,
                    url,
                    attempt.error,
                    ledger.id,
                    not ledger.options.checks,
                )
                for key in record.keys:
                    if key not in latest or latest[key][0] <= started:
                        latest[key] = (started, detail)
    return {key: detail for key, (_, detail) in latest.items()}


def unchecked_keys(details: Mapping[str, KeyDetail], keys: Iterable[str]) -> list[str]:
    """The ``keys`` (in their order) whose latest recorded run skipped its checks."""
    return [key for key in keys if key in details and details[key].checks_off]
