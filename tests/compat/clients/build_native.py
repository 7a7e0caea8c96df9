"""Building the client matrix's Go and Rust programs.

Go: amqp091-go as go/go.mod and go/go.sum pin it, from the module proxy into the cache's module cache, and
Debian's amqp091-go 1.5.0 in GOPATH mode (the same source). Rust: lapin as rust/Cargo.lock pins it, from
crates.io into the cache's own CARGO_HOME, built in debug. Downloading is a step of its own: when it fails
the language is skipped (no registry here); a program that does not build is a failure. The go and cargo
build caches make a rebuild of unchanged sources a second or two.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.build_cache_dir import build_cache_dir

from .build_cache import built, fetched, fingerprint, locked, run

HERE = Path(__file__).parent
DEBIAN_GO_PATH = Path("/usr/share/gocode")
DEBIAN_GO_PACKAGE = DEBIAN_GO_PATH / "src/github.com/rabbitmq/amqp091-go"


def go_cache() -> Path:
    """Go's build and module caches, shared with tests/container's Go program (Go keeps them safe for
    concurrent use): the standard library is compiled once per machine, not once per suite or checkout."""
    return build_cache_dir("go")


def _go_env() -> dict[str, str]:
    return {
        "GOCACHE": str(go_cache() / "cache"),
        "GOMODCACHE": str(go_cache() / "mod"),
        # Writable module files, so that the cache can be deleted like any folder.
        "GOFLAGS": "-modcacherw",
        # The toolchain installed here, never one fetched because go.mod asks for a newer one.
        "GOTOOLCHAIN": "local",
    }


def build_go(_: Path) -> list[str]:
    """The program on the amqp091-go that go/go.sum pins."""
    if shutil.which("go") is None:
        pytest.skip("go not installed (apt-get install golang-go)")
    with locked("go") as root:
        env = _go_env()
        fetched(run(["go", "mod", "download"], HERE / "go", env), "go mod download (amqp091-go)")
        sources = [HERE / "go" / name for name in ("go.mod", "go.sum")] + sorted((HERE / "go").glob("*.go"))
        binary = root / f"go-scenario-{fingerprint(*sources)}"
        built(run(["go", "build", "-mod=readonly", "-o", str(binary), "."], HERE / "go", env), "go build")
    return [str(binary)]


def build_go_debian(_: Path) -> list[str]:
    """The same program on Debian's amqp091-go 1.5.0 (GOPATH mode: no module download, no network)."""
    if shutil.which("go") is None:
        pytest.skip("go not installed (apt-get install golang-go)")
    package = "golang-github-rabbitmq-amqp091-go-dev"
    if not DEBIAN_GO_PACKAGE.is_dir():
        pytest.skip(f"{DEBIAN_GO_PACKAGE} missing (apt-get install {package})")
    with locked("go") as root:
        env = {**_go_env(), "GO111MODULE": "off", "GOPATH": str(DEBIAN_GO_PATH), "GOPROXY": "off"}
        binary = root / f"go-debian-scenario-{fingerprint(HERE / 'go/scenario.go')}"
        cmd = ["go", "build", "-o", str(binary), str(HERE / "go/scenario.go")]
        built(run(cmd, HERE, env), "go build (Debian's amqp091-go)")
    return [str(binary)]


def build_rust(_: Path) -> list[str]:
    """The program on the lapin that rust/Cargo.lock pins."""
    if shutil.which("cargo") is None:
        pytest.skip("cargo not installed (rustup or apt-get install cargo)")
    project = HERE / "rust"
    with locked("rust") as root:
        env = {
            "CARGO_HOME": str(root / "cargo-home"),
            "CARGO_TARGET_DIR": str(root / "cargo-target"),
            # A debug build (debug assertions on) without debug info, which no one reads here, and without
            # incremental state, which a build once per clean checkout never reuses: the cold build of lapin
            # and tokio took 40 s of CPU instead of 46 s.
            "CARGO_PROFILE_DEV_DEBUG": "0",
            "CARGO_INCREMENTAL": "0",
        }
        fetched(run(["cargo", "fetch", "--locked"], project, env), "cargo fetch (lapin)")
        built(run(["cargo", "build", "--locked", "--offline"], project, env), "cargo build")
        # The target folder is shared by every checkout: the program this checkout's sources made is copied
        # to a name of their own before the lock is released.
        sources = [project / "Cargo.toml", project / "Cargo.lock", *sorted(project.glob("src/**/*.rs"))]
        binary = root / f"rust-scenario-{fingerprint(*sources)}"
        shutil.copy2(root / "cargo-target/debug/clientmatrix-scenario", binary)
    return [str(binary)]
