"""The embedded Spark's Delta Lake jars: downloaded once from Maven Central into a cache
outside any project (``$DBXDEC_JARS_DIR``, else ``$XDG_CACHE_HOME/dbxdec/jars``, else
``~/.cache/dbxdec/jars``), checked against its SHA-1 files, with ``mvn dependency:copy``
(which honours ``~/.m2/settings.xml`` mirrors and proxies) as the fallback; unlike
``spark.jars.packages``, no Ivy resolution at every session start.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ...errors import EnvironmentProblem

DELTA_VERSION = "4.0.1"
"""delta-spark release paired with PySpark 4.0.x (Delta's compatibility table: 4.0.x <-> 4.0.x)."""
SCALA_BINARY = "2.13"
JARS_DIR_ENV = "DBXDEC_JARS_DIR"
MAVEN_REPOSITORY_ENV = "DBXDEC_MAVEN_REPOSITORY"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
SETUP_COMMAND = "dbxdec setup-spark"


@dataclass(frozen=True, slots=True)
class MavenJar:
    """One jar on Maven Central."""

    group: str
    artifact: str
    version: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def url(self, repository: str) -> str:
        group_path = self.group.replace(".", "/")
        base = repository.rstrip("/")
        return f"{base}/{group_path}/{self.artifact}/{self.version}/{self.file_name}"


DELTA_JARS: tuple[MavenJar, ...] = (
    MavenJar("io.delta", f"delta-spark_{SCALA_BINARY}", DELTA_VERSION),
    MavenJar("io.delta", "delta-storage", DELTA_VERSION),
)


def jars_dir() -> Path:
    """The folder that caches the jars (not created)."""
    configured = os.environ.get(JARS_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dbxdec" / "jars"


def cached_jars(folder: Path | None = None) -> list[Path] | None:
    """The cached jars' paths, or ``None`` when any is missing."""
    paths = [(folder or jars_dir()) / jar.file_name for jar in DELTA_JARS]
    return paths if all(p.is_file() and p.stat().st_size > 0 for p in paths) else None


def ensure_delta_jars(*, download: bool = True, folder: Path | None = None) -> list[Path]:
    """The Delta jars, downloaded into the cache first when missing.

    Raises:
        EnvironmentProblem: a jar is missing and could not be fetched (what was tried,
            what to run).
    """
    root = folder or jars_dir()
    found = cached_jars(root)
    if found is not None:
        return found
    if not download:
        raise EnvironmentProblem(_missing_message(root, "downloads are off"))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot create the Delta jar cache {root}: {exc.strerror}; set {JARS_DIR_ENV} "
            "to a writable folder"
        ) from None
    repository = os.environ.get(MAVEN_REPOSITORY_ENV, MAVEN_CENTRAL)
    problems: list[str] = []
    for jar in DELTA_JARS:
        target = root / jar.file_name
        if target.is_file() and target.stat().st_size > 0:
            continue
        problem = _download(jar, repository, target)
        if problem is not None:
            fallback = _maven_copy(jar, root)
            if fallback is not None:
                problems.append(f"{jar.file_name}: {problem}; mvn: {fallback}")
    if problems:
        raise EnvironmentProblem(_missing_message(root, "; ".join(problems)))
    return [root / jar.file_name for jar in DELTA_JARS]


def _missing_message(root: Path, why: str) -> str:
    names = ", ".join(jar.coordinate for jar in DELTA_JARS)
    return (
        f"the Delta Lake jars ({names}) are not in {root} and could not be fetched ({why}); "
        f"run `{SETUP_COMMAND}` on a machine that reaches Maven Central, or copy the jars "
        f"into {root} (or set {JARS_DIR_ENV})"
    )


def _download(jar: MavenJar, repository: str, target: Path) -> str | None:
    """Fetch ``jar`` into ``target`` atomically; a problem's description, or ``None``."""
    url = jar.url(repository)
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=30) as response:
            expected = response.read().decode("ascii", "replace").split()[0].strip().lower()
        digest = hashlib.sha1(usedforsecurity=False)
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".part-", suffix=".jar")
        try:
            with (
                os.fdopen(handle, "wb") as out,
                urllib.request.urlopen(url, timeout=60) as response,
            ):
                while chunk := response.read(1 << 16):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected:
                return f"{url}: checksum mismatch"
            os.replace(temp, target)
        finally:
            Path(temp).unlink(missing_ok=True)
    except (urllib.error.URLError, OSError, IndexError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return f"{url}: {reason}"
    return None


def _maven_copy(jar: MavenJar, root: Path) -> str | None:
    """Fetch ``jar`` with the machine's Maven client; a problem's description, or ``None``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        return "mvn not found"
    command = [
        mvn,
        "-q",
        "-B",
        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
        f"-Dartifact={jar.coordinate}:jar",
        f"-DoutputDirectory={root}",
    ]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if completed.returncode != 0 or not (root / jar.file_name).is_file():
        lines = (completed.stdout + completed.stderr).strip().splitlines()
        return lines[-1] if lines else f"exit {completed.returncode}"
    return None
