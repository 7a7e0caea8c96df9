"""The client matrix's scenario programs: how each is built (once, see build_cache.py) and run.

Client libraries come from the registries, pinned by this folder's lock files (Maven Central: java/pom.xml
and spring/pom.xml; the Go module proxy: go/go.sum; crates.io: rust/Cargo.lock; npm: node/package-lock.json)
and fetched at test time, or from Debian (ruby-bunny, php-amqplib, librabbitmq-client-java,
golang-github-rabbitmq-amqp091-go-dev), which ``.ci/run`` installs. A language whose toolchain or library is
missing, or whose registry cannot be reached, is skipped with the reason; a program that does not build is a
failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import pytest

from .build_jvm import build_java, build_java_debian, build_spring
from .build_native import build_go, build_go_debian, build_rust

HERE = Path(__file__).parent
CLIENTS = ("go", "go-debian", "java", "java-debian", "node", "php", "ruby", "rust", "spring")
BUILD_TIMEOUT_S = 300
# A program bounds each of its waits (5 s); this only stops one that hangs regardless, within pytest's 120 s.
RUN_TIMEOUT_S = 75

# The names a broker makes up: direct reply-to's pseudo-queue names (in error texts) differ on every run.
_REPLY_TO_NAME = re.compile(r"amq\.rabbitmq\.reply-to\.[^'\"\s]+")


def program_url(amqp_url: str) -> str:
    """``amqp_url`` with its vhost spelled as the AMQP URI spec reads it: ``/`` is ``%2F``, and an empty path
    would be the vhost ``""`` to the Java client."""
    parsed = urlparse(amqp_url)
    vhost = parsed.path[1:] if parsed.path not in ("", "/") else "/"
    return f"{parsed.scheme}://{parsed.netloc}/{quote(vhost, safe='')}"


def normalise(output: str, prefix: str) -> Any:
    """The observation a program printed, with the test's name prefix and broker-made names replaced."""
    text = _REPLY_TO_NAME.sub("amq.rabbitmq.reply-to.*", output.replace(prefix, "P"))
    return json.loads(text)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )


def _require(condition: bool, reason: str) -> None:
    if not condition:
        pytest.skip(reason)


def _build_node(_: Path) -> list[str]:
    node_dir = HERE / "node"
    _require(bool(shutil.which("node") and shutil.which("npm")), "node/npm not installed")
    stamp = node_dir / "node_modules/.package-lock.json"
    lock = node_dir / "package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        done = _run(["npm", "ci", "--no-audit", "--no-fund"], node_dir)
        _require(done.returncode == 0, f"npm ci failed, no @cloudamqp/amqp-client: {done.stderr[-300:]}")
    return ["node", str(node_dir / "scenario.mjs")]


def _build_ruby(_: Path) -> list[str]:
    _require(shutil.which("ruby") is not None, "ruby not installed (apt-get install ruby-bunny)")
    done = _run(["ruby", "-e", 'require "bunny"'], HERE)
    _require(done.returncode == 0, "Bunny not installed (apt-get install ruby-bunny)")
    return ["ruby", str(HERE / "ruby/scenario.rb")]


def _build_php(_: Path) -> list[str]:
    _require(shutil.which("php") is not None, "php not installed (apt-get install php-cli php-amqplib)")
    done = _run(["php", "-r", 'require "PhpAmqpLib/autoload.php";'], HERE)
    _require(done.returncode == 0, "php-amqplib not installed (apt-get install php-amqplib)")
    return ["php", str(HERE / "php/scenario.php")]


_BUILDERS = {
    "go": build_go,
    "go-debian": build_go_debian,
    "java": build_java,
    "java-debian": build_java_debian,
    "node": _build_node,
    "php": _build_php,
    "ruby": _build_ruby,
    "rust": build_rust,
    "spring": build_spring,
}


@dataclass
class ClientPrograms:
    """Builds each language's program the first time a test asks for it, and runs it."""

    build_dir: Path
    _commands: dict[str, list[str]] = field(default_factory=dict)
    _skipped: dict[str, str] = field(default_factory=dict)

    def command(self, client: str) -> list[str]:
        if client in self._skipped:
            pytest.skip(self._skipped[client])
        if client not in self._commands:
            try:
                self._commands[client] = _BUILDERS[client](self.build_dir)
            except pytest.skip.Exception as skipped:
                self._skipped[client] = str(skipped.msg)
                raise
        return self._commands[client]

    def observe(self, client: str, amqp_url: str, prefix: str, management_url: str) -> Any:
        """Run ``client``'s program against the broker at ``amqp_url`` (its management API at
        ``management_url``); its normalised observation."""
        cmd = [*self.command(client), program_url(amqp_url), prefix, management_url]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as hung:
            pytest.fail(f"{client} program still running after {RUN_TIMEOUT_S} s: {hung.stderr!r}"[-2000:])
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            pytest.fail(f"{client} program exited {done.returncode}:\n{done.stdout}\n{done.stderr[-2000:]}")
        return normalise(lines[-1], prefix)
