"""The project's own code for executors: one zip of ``broker/`` and ``protocol/`` per version and content.

On a cluster the executors' Python workers cannot import the driver's ``broker`` package (replay routes with
``broker.core`` inside tasks), so the driver adds this zip with ``SparkContext.addPyFile``. The zip is built
once and cached under ``$WARRENMQ_CACHE_DIR`` (default ``~/.cache/warrenmq``), named by the version and a
digest of the sources, so an edited checkout never ships stale code and an unchanged one never rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import broker

PACKAGES = ("broker", "protocol")
_SUFFIXES = (".py", ".pyi", ".typed")


def source_root() -> Path:
    """The directory holding the ``broker`` and ``protocol`` packages (checkout or site-packages)."""
    return Path(broker.__file__).resolve().parent.parent


def cache_dir() -> Path:
    configured = os.environ.get("WARRENMQ_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "warrenmq"


def _sources(root: Path) -> list[Path]:
    files = []
    for package in PACKAGES:
        for path in (root / package).rglob("*"):
            if path.is_file() and path.suffix in _SUFFIXES and "__pycache__" not in path.parts:
                files.append(path.relative_to(root))
    return sorted(files)


def project_zip(root: Path | None = None, into: Path | None = None) -> Path:
    """The zip of the project's packages, built if this version and content has none yet."""
    root = root or source_root()
    files = _sources(root)
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.as_posix().encode() + b"\0" + (root / name).read_bytes() + b"\0")
    folder = into or cache_dir()
    target = folder / f"warrenmq-{broker.__version__}-{digest.hexdigest()[:12]}.zip"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: two drivers starting together never ship a half-written zip.
    handle, temporary = tempfile.mkstemp(prefix=".warrenmq-", suffix=".zip", dir=folder)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in files:
                archive.write(root / name, name.as_posix())
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target
