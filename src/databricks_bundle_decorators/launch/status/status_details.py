"""A key's latest run recorded in the local ledgers (run id, page, error, backfill id);
runs started elsewhere (a schedule, the Jobs UI) have none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..ledger.ledger import Attempt, Ledger


@dataclass(frozen=True, slots=True)
class KeyDetail:
    """The latest recorded run of a key (``state``: its attempt's end; ``checks_off``: run with
    ``--no-checks``).
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


def latest_attempts(ledgers: Iterable[Ledger]) -> dict[str, tuple[Ledger, Attempt]]:
    """The latest submitted attempt of every key in ``ledgers``, with its ledger."""
    latest: dict[str, tuple[float, Ledger, Attempt]] = {}
    for ledger in ledgers:
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected":
                    continue
                started = attempt.submitted_at or ledger.created_at
                for key in record.keys:
                    if key not in latest or latest[key][0] <= started:
                        latest[key] = (started, ledger, attempt)
    return {key: (ledger, attempt) for key, (_, ledger, attempt) in latest.items()}


def ledger_details(ledgers: Iterable[Ledger]) -> dict[str, KeyDetail]:
    """The latest attempt of every key in ``ledgers`` (:func:`latest_attempts`)."""
    details: dict[str, KeyDetail] = {}
    for key, (ledger, attempt) in latest_attempts(ledgers).items():
        backend, url = ledger.backend, attempt.url
        if url is None and backend.kind == "databricks":
            url = run_page_url(backend.host, backend.job_id, attempt.run_id)
        checks_off = not ledger.options.checks
        details[key] = KeyDetail(
            attempt.state, attempt.run_id, url, attempt.error, ledger.id, checks_off
        )
    return details


def unchecked_keys(details: Mapping[str, KeyDetail], keys: Iterable[str]) -> list[str]:
    """The ``keys`` (in their order) whose latest recorded run skipped its checks."""
    return [key for key in keys if key in details and details[key].checks_off]
