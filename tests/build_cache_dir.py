"""Where the suites keep what they download and build for their client programs: outside the checkout.

The client matrix (tests/compat/clients: Maven's local repository, Go's module and build caches, Cargo's
registry and target folder, the compiled programs) and tests/container's Testcontainers programs keep their
downloads and builds in the user's cache folder, ``$XDG_CACHE_HOME/warrenmq`` (``~/.cache/warrenmq``), as pip,
npm, Maven and Go keep theirs, so that a fresh clone on a machine that ran the suites before builds nothing
that is up to date: on the 2-core machine the cold builds of a clean clone took about three minutes of the run
(rust 84 s, go 54 s, the Java and Spring classpaths 32 s, Testcontainers' Go program more). A machine that
never ran them fetches and builds once, as before.

Several checkouts (a clone, a worktree) may share the folder at once: each build holds its language's lock,
and every output that depends on the checkout's sources is named by their fingerprint, so one checkout never
runs a program built from another's sources. ``WARRENMQ_BUILD_CACHE`` names another folder (a throw-away one
reproduces a cold machine); ``WARRENMQ_CLIENT_CACHE`` still moves the client matrix's part alone.
"""

from __future__ import annotations

import os
from pathlib import Path


def build_cache_dir(part: str) -> Path:
    """The folder ``part`` of the suites' build cache, created if missing."""
    explicit = os.environ.get("WARRENMQ_BUILD_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "warrenmq"
    path = root / part
    path.mkdir(parents=True, exist_ok=True)
    return path
