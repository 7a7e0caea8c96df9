"""The Java, Go and Node programs of tests/container, built from their lock files (pom.xml's pinned versions,
go.sum, package-lock.json) with their dependencies fetched from Maven Central, the Go module proxy and the
npm registry into ``testcontainers`` of the suites' build cache outside the checkout
(tests/build_cache_dir.py, ``~/.cache/warrenmq``): the first run of a machine downloads, later runs from any
clone find the cache. Each build runs once per session and at most one at a time across pytest-xdist workers
(a file lock), and a missing toolchain or registry skips its language with the reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.build_cache_dir import build_cache_dir
from tests.compat.clients.build_cache import fingerprint
from tests.compat.clients.build_native import go_cache

HERE = Path(__file__).parent
CACHE = build_cache_dir("testcontainers")
JAVA_DIR, GO_DIR, NODE_DIR = HERE / "java", HERE / "go", HERE / "node"
# What a cold run of this 2-core machine took (fetch, build, run): Java 27 s (30 MB of jars), Node 20 s, Go
# 2 min (7 s to fetch 220 MB of modules, the rest compiling Docker's client); warm, seconds each.
FETCH_TIMEOUT_S = 900


@contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=FETCH_TIMEOUT_S,
        check=False,
    )


def _require(*tools: str, why: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: {why}")


def java_classpath() -> str:
    """The Java program compiled (into the cache's java-target-FINGERPRINT, named by the sources it was
    compiled from, as several checkouts share the cache) and its run-time classpath, offline when the local
    repository already holds every pinned artifact."""
    _require("java", "mvn", why="Testcontainers for Java needs a JDK 17 and Maven")
    sources = [JAVA_DIR / "pom.xml", *sorted(JAVA_DIR.glob("src/**/*.java"))]
    target = CACHE / f"java-target-{fingerprint(*sources)}"
    with _locked("java"):
        maven = [
            "mvn",
            "-B",
            "-q",
            f"-Dmaven.repo.local={CACHE / 'm2'}",
            f"-Dwarrenmq.build.dir={target}",
            "compile",
            "dependency:build-classpath",
            f"-Dmdep.outputFile={target / 'classpath.txt'}",
        ]
        built = _run([*maven[:1], "-o", *maven[1:]], JAVA_DIR)
        if built.returncode != 0:
            built = _run(maven, JAVA_DIR)
        if built.returncode != 0:
            output = (built.stdout + built.stderr).strip()
            if "Could not resolve" in output or "Could not transfer" in output:
                pytest.skip(f"Maven Central unreachable for the pinned artifacts: {output[-800:]}")
            raise AssertionError(f"the Java program does not build:\n{output[-4000:]}")
    return f"{target / 'classes'}{os.pathsep}{(target / 'classpath.txt').read_text().strip()}"


def go_environment() -> dict[str, str]:
    """Go's module and build caches (the client matrix's, in the suites' build cache), with the modules the
    test's packages need downloaded (`go list -deps -test`: 220 MB, where `go mod download` fetches the
    whole graph's 480)."""
    _require("go", why="Testcontainers for Go needs the Go toolchain")
    env = {
        # Shared with the client matrix's Go programs (tests/compat/clients/build_native.py): the standard
        # library and amqp091-go compile once per checkout.
        "GOMODCACHE": str(go_cache() / "mod"),
        "GOCACHE": str(go_cache() / "cache"),
        "GOFLAGS": "-modcacherw -mod=readonly",
        # go.mod's version line: an older Go would fetch a toolchain, which no registry here serves.
        "GOTOOLCHAIN": "local",
    }
    with _locked("go"):
        fetched = _run(["go", "list", "-deps", "-test", "./..."], GO_DIR, env)
    if fetched.returncode != 0:
        output = fetched.stderr.strip()
        if "requires go >=" in output or "go.mod requires go" in output:
            pytest.skip(f"the Go toolchain is older than go.mod's: {output[-500:]}")
        pytest.skip(f"the Go modules could not be fetched (no module proxy?): {output[-800:]}")
    return env


def npm_ci() -> None:
    """node_modules from the lockfile, as `npm ci` installs it (skipped when it is already current), npm's
    download cache in the suites' build cache."""
    _require("node", "npm", why="Testcontainers for Node needs Node.js and npm")
    installed = NODE_DIR / "node_modules/.package-lock.json"
    lockfile = NODE_DIR / "package-lock.json"
    with _locked("node"):
        if installed.exists() and installed.stat().st_mtime >= lockfile.stat().st_mtime:
            return
        result = _run(["npm", "ci", "--no-audit", "--no-fund", "--cache", str(CACHE / "npm-cache")], NODE_DIR)
    if result.returncode != 0:
        pytest.skip(f"npm ci failed (no npm registry?): {result.stderr.strip()[-800:]}")
