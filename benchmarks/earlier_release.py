"""The earlier release's environment, which ``benchmarks/generation.py`` compares against.

PyPI's ``databricks-bundle-decorators==0.12.15`` is an unrelated earlier project that
dbxdec never depends on: it is only ever installed in a Python 3.12 venv of its own,
inside the project's cache (``$DBXDEC_EARLIER_DIR``, else
``$XDG_CACHE_HOME/dbxdec/earlier-0.12.15``, else ``~/.cache/dbxdec/earlier-0.12.15``),
with the ``databricks-bundles`` of the running interpreter (dbxdec's venv), so both
sides load into the same ``Resources``. ``make bench-earlier`` builds it
(``python benchmarks/earlier_release.py``) from ``python3.12`` on ``PATH`` or pyenv's
3.12: a no-op when it is there, one line and exit 1 when there is no Python 3.12 or pip
fails. Not a benchmark itself.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

RELEASE = "databricks-bundle-decorators==0.12.15"
EARLIER_DIR_ENV = "DBXDEC_EARLIER_DIR"
PYTHON = "python3.12"  # the release requires Python >= 3.12
_READY = ".installed"


def earlier_dir() -> Path:
    """The folder of the earlier release's venv (not created)."""
    configured = os.environ.get(EARLIER_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dbxdec" / "earlier-0.12.15"


def earlier_python() -> Path | None:
    """The venv's interpreter, or ``None`` when the venv is not (completely) built."""
    folder = earlier_dir()
    python = folder / "bin" / "python"
    return python if (folder / _READY).is_file() and python.is_file() else None


def python_312() -> str | None:
    """A Python 3.12 that runs: ``python3.12`` on ``PATH`` (a pyenv shim only when that
    version is active), else pyenv's newest installed 3.12."""
    candidates = [shutil.which(PYTHON)]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += [str(p) for p in sorted((root / "versions").glob("3.12*/bin/python"))[::-1]]
    for candidate in candidates:
        if candidate is None:
            continue
        probe = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    return None


def build() -> str | None:
    """Build the venv unless it is there; the one-line problem when it cannot be built."""
    if earlier_python() is not None:
        return None
    base = python_312()
    if base is None:
        return (
            f"no working {PYTHON} on PATH or in pyenv: {RELEASE} needs Python 3.12 (e.g. "
            "pyenv install 3.12); the comparison says skipped until make bench-earlier builds it"
        )
    folder = earlier_dir()
    bundles = importlib.metadata.version("databricks-bundles")
    pinned = f"databricks-bundles=={bundles}"  # the Resources dbxdec loads into
    steps = (
        [base, "-m", "venv", "--clear", str(folder)],
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", RELEASE, pinned],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return f"could not build {folder} ({' '.join(step[:3])} ...): {last}"
    (folder / _READY).write_text(f"{RELEASE}\n{pinned}\n")
    return None


def main() -> int:
    problem = build()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    print(f"{RELEASE} in {earlier_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
