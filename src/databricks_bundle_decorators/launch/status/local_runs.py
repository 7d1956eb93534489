"""Records of ``dbxdec run --local`` runs, so local ``status``, ``catchup`` and ``--rerun``
see their keys: ``.dbxdec/runs/<job>/<run id>.json``, written atomically; a damaged or
foreign file is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ...atomic import write_atomically
from ..plan.history import RunObservation
from ..plan.states import KeyState
from .status_grid import KeyDetail

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,200}")
_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})


def runs_dir(root: Path, job: str) -> Path:
    """Where the records of ``job``'s single local runs live."""
    return root / ".dbxdec" / "runs" / job


@dataclass(frozen=True, slots=True)
class LocalRun:
    """One ``dbxdec run --local`` run (times: epoch seconds; ``keys`` ``()``: no keys)."""

    run_id: str
    keys: tuple[str, ...]
    state: KeyState
    started: float
    ended: float
    error: str = ""

    def observation(self) -> RunObservation:
        return RunObservation(self.keys, self.state, self.started, self.run_id, self.error)


def record_local_run(root: Path, job: str, run: LocalRun) -> Path:
    """Write ``run``'s record atomically; returns its path.

    Raises:
        ValueError: the job name or run id cannot be a file name.
        OSError: the folder cannot be written.
    """
    for name in (job, run.run_id):
        if _SAFE_NAME.fullmatch(name) is None or name in (".", ".."):
            raise ValueError(f"{name!r} cannot name a local run record")
    path = runs_dir(root, job) / f"{run.run_id}.json"
    write_atomically(path, json.dumps(asdict(run)) + "\n")
    return path


def local_runs(root: Path, job: str) -> list[LocalRun]:
    """The recorded single local runs of ``job``, oldest first (unreadable files skipped)."""
    folder = runs_dir(root, job)
    if _SAFE_NAME.fullmatch(job) is None or not folder.is_dir():
        return []
    found: list[LocalRun] = []
    for path in folder.glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            state = str(data["state"])
            if state not in _STATES:
                continue
            found.append(
                LocalRun(
                    str(data["run_id"]),
                    tuple(str(k) for k in data["keys"]),
                    state,  # type: ignore[arg-type]
                    float(data["started"]),
                    float(data["ended"]),
                    str(data.get("error", "")),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(found, key=lambda run: run.started)


def with_local_run_details(
    details: dict[str, KeyDetail],
    observations: Sequence[RunObservation],
    runs: Iterable[LocalRun],
) -> dict[str, KeyDetail]:
    """``details`` with each key whose latest run is a single local run (later than the
    ledgers' ``observations``) described by that run.
    """
    runs = list(runs)
    if not runs:
        return dict(details)
    ledger_started: dict[str, float] = {}
    for obs in observations:
        for key in obs.keys:
            ledger_started[key] = max(obs.started, ledger_started.get(key, obs.started))
    out = dict(details)
    for run in runs:  # oldest first: a later run's detail replaces an earlier one's
        detail = KeyDetail(run.state, run.run_id, None, run.error)
        for key in run.keys:
            if run.started >= ledger_started.get(key, float("-inf")):
                out[key] = detail
    return out
