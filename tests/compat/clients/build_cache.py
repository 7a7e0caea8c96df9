"""Where the client matrix keeps what it downloads and builds: one folder that outlives the test session.

Maven's local repository, Go's module and build caches, Cargo's registry and target folder and the compiled
programs live in ``client-matrix`` of the suites' build cache outside the checkout (tests/build_cache_dir.py:
``~/.cache/warrenmq``; ``WARRENMQ_CLIENT_CACHE`` moves this part alone), so a machine fetches each registry's
packages once and a later run, from any clone, builds nothing that is up to date. Every build holds an
exclusive lock on its language's lock file, so parallel test processes (xdist workers, two checkouts sharing
the folder) build once and reuse it; what a checkout's sources make is named by their fingerprint.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.build_cache_dir import build_cache_dir

# A first Maven resolution or a cold `cargo build` of lapin's crates takes a minute or two on 2 cores.
BUILD_TIMEOUT_S = 600


def cache_dir() -> Path:
    explicit = os.environ.get("WARRENMQ_CLIENT_CACHE")
    if not explicit:
        return build_cache_dir("client-matrix")
    path = Path(explicit)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(name: str) -> Iterator[Path]:
    """The cache folder, with ``name``'s build lock held (blocking) until the block ends."""
    root = cache_dir()
    with (root / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield root
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fingerprint(*paths: Path) -> str:
    """A short hash of the files' names and contents: a build's inputs, naming its output folder."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as slow:
        pytest.fail(f"{cmd[0]} still running after {BUILD_TIMEOUT_S} s: {slow.stderr!r}"[-2000:])


def fetched(done: subprocess.CompletedProcess[str], what: str) -> None:
    """A failed download skips the language: the registry may be unreachable from this machine."""
    if done.returncode != 0:
        pytest.skip(f"{what} failed, registry unreachable? {(done.stdout + done.stderr)[-400:]}")


def built(done: subprocess.CompletedProcess[str], what: str) -> None:
    """A program that does not build is a failure, not a skip."""
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
