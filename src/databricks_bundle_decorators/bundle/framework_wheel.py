"""The wheel of the running dbxdec, which projects and deployed jobs install: by PEP 610
``direct_url.json``, built from a local source directory, the local ``.whl`` when it still
exists, else rebuilt from the files ``RECORD`` lists."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from .. import __version__
from ..errors import UsageError

if TYPE_CHECKING:  # imported where used: code generation needs neither (~10 ms at start-up)
    from importlib import metadata

FRAMEWORK_DISTRIBUTION = "dbxdec"
FRAMEWORK_PACKAGE = "databricks_bundle_decorators"
WHEELS_DIR = "wheels"
REFRESH_COMMAND = "dbxdec wheel"

_WHEEL_NAME = re.compile(r"dbxdec-(?P<version>[^-]+)-py3-none-any\.whl")
# Files an installer writes into the dist-info (PEP 627, PEP 610): not part of a wheel.
_INSTALLER_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
_WHEEL_FILE = b"Wheel-Version: 1.0\nGenerator: dbxdec\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def framework_wheel_name(version: str = __version__) -> str:
    """File name of dbxdec's wheel: ``dbxdec-0.1.0-py3-none-any.whl``."""
    return f"{FRAMEWORK_DISTRIBUTION}-{version}-py3-none-any.whl"


def default_framework_wheel(version: str = __version__) -> str:
    """The framework wheel's path relative to a project root, for ``version``."""
    return f"{WHEELS_DIR}/{framework_wheel_name(version)}"


def wheel_version(path: Path) -> str | None:
    """The dbxdec version of wheel ``path`` (its ``METADATA``, else its file name);
    ``None`` for a file that is not a dbxdec wheel."""
    try:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                parts = PurePosixPath(name).parts
                if len(parts) == 2 and parts[1] == "METADATA" and parts[0].endswith(".dist-info"):
                    fields = metadata_fields(archive.read(name).decode("utf-8"))
                    if fields.get("Name", "").lower() == FRAMEWORK_DISTRIBUTION:
                        return fields.get("Version")
                    return None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError):
        pass
    match = _WHEEL_NAME.fullmatch(path.name)
    return match["version"] if match else None


def metadata_fields(text: str) -> dict[str, str]:
    """The ``Name: value`` header fields of a core-metadata file (first value wins)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        name, sep, value = line.partition(":")
        if sep and not line[0].isspace():
            fields.setdefault(name.strip(), value.strip())
    return fields


@dataclass(frozen=True, slots=True)
class InstallSource:
    """Where the running dbxdec was installed from (PEP 610): a local source
    ``directory``, or a local ``wheel`` file that still exists."""

    directory: Path | None = None
    wheel: Path | None = None


def install_source(distribution: metadata.Distribution) -> InstallSource:
    """Read ``direct_url.json`` of ``distribution``; an empty source when there is none."""
    text = distribution.read_text("direct_url.json")
    if not text:
        return InstallSource()
    try:
        document = json.loads(text)
    except ValueError:
        return InstallSource()
    url = document.get("url", "") if isinstance(document, dict) else ""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return InstallSource()
    from urllib.request import url2pathname

    path = Path(url2pathname(unquote(parsed.path)))
    if "dir_info" in document and path.is_dir():
        return InstallSource(directory=path)
    if path.suffix == ".whl" and path.is_file():
        return InstallSource(wheel=path)
    return InstallSource()


def running_distribution() -> metadata.Distribution:
    """The installed ``dbxdec`` distribution whose code is running.

    Raises:
        UsageError: it is not installed, or its metadata has another version.
    """
    from importlib import metadata

    try:
        distribution = metadata.distribution(FRAMEWORK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise UsageError(
            f"dbxdec is not installed as a distribution (no {FRAMEWORK_DISTRIBUTION} metadata "
            "on sys.path), so its wheel cannot be made: pip install a dbxdec wheel (make wheel "
            "in a clone writes one), or pip install -e its source folder"
        ) from None
    if distribution.version != __version__:
        raise UsageError(
            f"the installed dbxdec metadata says {distribution.version} but the running code "
            f"is {__version__}: reinstall dbxdec"
        )
    return distribution


def write_framework_wheel(out_dir: Path, distribution: metadata.Distribution | None = None) -> Path:
    """Write (or replace) the running dbxdec's wheel in ``out_dir``; return its path.

    Raises:
        UsageError: the wheel cannot be made; the message says why and what to do.
    """
    dist = distribution or running_distribution()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / framework_wheel_name(dist.version)
    source = install_source(dist)
    with tempfile.TemporaryDirectory(prefix="dbxdec-wheel-") as scratch:
        if source.directory is not None:
            built = _build_from_directory(source.directory, Path(scratch), dist.version)
        elif source.wheel is not None:
            built = source.wheel
        else:
            built = _rebuild_from_record(dist, Path(scratch))
        found = wheel_version(built)
        if found != dist.version:
            raise UsageError(
                f"the dbxdec wheel made from {built} has version {found}, but the running "
                f"dbxdec is {dist.version}: reinstall dbxdec"
            )
        partial = target.with_name(f".{target.name}.partial")
        shutil.copyfile(built, partial)
        partial.replace(target)
    return target


_BUILD_INPUTS = ("pyproject.toml", "setup.cfg", "setup.py", "MANIFEST.in", "README*", "LICEN[CS]E*")


def _private_copy(source: Path, scratch: Path) -> Path:
    """``source``'s build inputs under ``scratch``: parallel in-place pip builds never clash."""
    if not (source / "src").is_dir():
        return source
    copy = scratch / "source"
    copy.mkdir()
    for pattern in _BUILD_INPUTS:
        for path in source.glob(pattern):
            if path.is_file():
                shutil.copy2(path, copy / path.name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(source / "src", copy / "src", ignore=ignore)
    return copy


def _build_from_directory(source: Path, scratch: Path, version: str) -> Path:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet"]
    command += ["--wheel-dir", str(scratch), str(_private_copy(source, scratch))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(scratch.glob(f"{FRAMEWORK_DISTRIBUTION}-*.whl"))
    if done.returncode != 0 or not wheels:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines()]
        last = next((line for line in reversed(lines) if line), "no wheel was written")
        raise UsageError(
            f"building dbxdec's wheel from its source folder {source} failed ('pip wheel' "
            f"exit {done.returncode}): {last}"
        )
    built = wheels[0]
    with zipfile.ZipFile(built) as archive:
        stray = sorted(
            {
                name.split("/", 1)[0]
                for name in archive.namelist()
                if not name.startswith((f"{FRAMEWORK_PACKAGE}/", f"{FRAMEWORK_DISTRIBUTION}-"))
            }
        )
    if stray:
        raise UsageError(
            f"the dbxdec wheel built from {source} also holds {', '.join(stray)} (left in "
            f"{source / 'build'} by an earlier build?): remove that folder and retry"
        )
    return built


# Hand-written on purpose: no packaging tool turns an *installed* distribution back into
# a wheel (pip, build and wheel all start from sources), and the wheel format is small:
# a zip of the files plus a dist-info whose RECORD lists every file with its sha256.
def _rebuild_from_record(dist: metadata.Distribution, scratch: Path) -> Path:
    files = dist.files
    if not files:
        raise UsageError(
            "the installed dbxdec lists no files (its dist-info has no RECORD), so its wheel "
            "cannot be rebuilt: reinstall dbxdec"
        )
    dist_info = f"{FRAMEWORK_DISTRIBUTION}-{dist.version}.dist-info"
    members: dict[str, bytes] = {}
    for entry in files:
        parts = PurePosixPath(str(entry)).parts
        # Console scripts live outside site-packages; entry_points.txt recreates them.
        if not parts or parts[0] == ".." or "__pycache__" in parts or parts[-1].endswith(".pyc"):
            continue
        if parts[0].endswith(".dist-info"):
            if parts[-1] in _INSTALLER_FILES:
                continue
            parts = (dist_info, *parts[1:])
        members["/".join(parts)] = Path(str(dist.locate_file(entry))).read_bytes()
    members.setdefault(f"{dist_info}/WHEEL", _WHEEL_FILE)
    # The dist-info goes last, as wheel tools write it.
    members = dict(sorted(members.items(), key=lambda item: item[0].startswith(dist_info)))
    record_name = f"{dist_info}/RECORD"
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in members.items()]
    record.append(f"{record_name},,")
    members[record_name] = ("\n".join(record) + "\n").encode("utf-8")
    path = scratch / framework_wheel_name(dist.version)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _digest(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def is_remote(path: str) -> bool:
    """Whether ``path`` is absolute or a URL (``dbfs:``, ``s3://``, ...), not project-relative."""
    return path.startswith(("/", "dbfs:")) or "://" in path


def check_framework_wheel(root: Path, wheel: str, *, version: str = __version__) -> None:
    """Check that the ``framework_wheel`` setting a deploy ships (relative to ``root``,
    or a remote path whose file name carries the version) is dbxdec ``version``.

    Raises:
        UsageError: missing or another version; the message says how to fix it.
    """
    remote = is_remote(wheel) or wheel.startswith("${")
    path = Path(wheel) if remote else root / wheel
    refresh = (
        f"run '{REFRESH_COMMAND}' in {root} to write {default_framework_wheel(version)} "
        f"and pin dbxdec=={version} in pyproject.toml"
    )
    if remote:
        match = _WHEEL_NAME.fullmatch(PurePosixPath(wheel).name)
        found = match["version"] if match else version
    elif not path.is_file():
        others = sorted(path.parent.glob(f"{FRAMEWORK_DISTRIBUTION}-*.whl"))
        listed = ", ".join(f"dbxdec {wheel_version(p)}" for p in others)
        held = f" ({path.parent.name}/ holds {listed})" if others else ""
        raise UsageError(
            f"framework wheel {wheel} not found{held}; this is dbxdec {version}: {refresh}"
        )
    else:
        found = wheel_version(path) or "unknown"
    if found != version:
        raise UsageError(
            f"framework wheel {wheel} is dbxdec {found}, but this is dbxdec {version}: {refresh}"
        )
