"""What `warrenmq serve` imports: only what its configuration uses, and only once it is used: the
management and Prometheus listeners build their aiohttp applications at their first connection.

Each test runs the real command (``python -m broker``'s ``__main__`` through runpy, in a child process) until
its readiness line, completes an AMQP handshake, stops it with SIGTERM and reads the modules the process had
imported, written by an ``atexit`` hook of the wrapper. Module lists, never times: the lists decide start-up
time, and they do not depend on the machine's load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from base64 import b64encode
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker.healthcheck import check

# Runs `warrenmq <argv>` exactly as the console script does, and records sys.modules when the process ends
# (after the readiness line, the handshake and the shutdown: a superset of what start-up imported).
WRAPPER = """
import atexit, json, runpy, sys
out = sys.argv[1]
def record():
    with open(out, "w") as f:
        json.dump(sorted(name for name, module in sys.modules.items() if module is not None), f)
atexit.register(record)
sys.argv = ["warrenmq", *sys.argv[2:]]
runpy.run_module("broker", run_name="__main__", alter_sys=True)
"""
# Packages a broker without management, Prometheus, journal and TLS listener must not import. (The standard
# library's ssl is not among them: asyncio itself imports it, asyncio.base_events -> asyncio.sslproto.)
UNUSED = (
    "aiohttp",
    "prometheus_client",
    "psutil",
    "broker.journal",
    "broker.server.tls",
    "broker.management.api.app",
    "broker.bench",
    # The PostgreSQL store and high availability: only with --store postgresql://....
    "asyncpg",
    "broker.storage.postgres",
    "broker.ha",
    # Streams and the plugin exchange types load with the first queue or exchange of theirs.
    "broker.core.streams.stream_queue",
    "broker.core.streams.stream_log",
    "broker.storage.stream_files",
    "broker.storage.stream_reader",
    "broker.storage.stream_recovery",
    "broker.core.exchanges.consistent_hash",
    "broker.core.exchanges.modulus_hash",
    "broker.core.exchanges.recent_history",
    "broker.core.exchanges.x_random",
    # rabbitmq_event_exchange: off unless enabled, as on RabbitMQ.
    "broker.session.event_exchange",
    # The standard library's archive support (zlib, bz2, lzma) comes with shutil: neither argparse's help
    # formatter, the disk alarm nor the spill directory needs it (broker.cli, server.alarms, storage.spill).
    "shutil",
)


def serve_and_list_modules(
    tmp_path: Path, *args: str, probe: Callable[[dict[str, object]], None] | None = None
) -> tuple[dict[str, object], set[str]]:
    """Run `warrenmq serve <args>` (port 0, data and $HOME under ``tmp_path``) until ready, make one AMQP
    handshake (and ``probe(ready)``), stop it; its readiness line and every module it imported."""
    modules_file = tmp_path / "modules.json"
    command = [
        sys.executable,
        "-c",
        WRAPPER,
        str(modules_file),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    # No rabbitmq.conf of this machine and no RABBITMQ_/WARRENMQ_ variables of the caller: their settings
    # (a TLS listener, say) would change what the process rightly imports.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RABBITMQ_", "WARRENMQ_")) or key == "WARRENMQ_PURE"
    }
    env["HOME"] = str(tmp_path)  # the CLI cookie
    process = subprocess.Popen(
        [*command, "--config-file", "none", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,  # the default data directory, ./warrenmq-data
        env=env,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        check(f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/")
        if probe is not None:
            probe(ready)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return ready, set(json.loads(modules_file.read_text()))


def _overview(port: object) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/overview",
        headers={"Authorization": "Basic " + b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        overview: dict[str, object] = json.load(response)
    return overview


def _http_answers(ready: dict[str, object]) -> None:
    """The management API answers authenticated GETs, several at once while its application is being built
    for the first of them, and the Prometheus endpoint serves metrics."""
    with ThreadPoolExecutor(4) as pool:
        overviews = list(pool.map(_overview, [ready["management_port"]] * 4))
    assert [bool(overview["management_version"]) for overview in overviews] == [True] * 4
    assert overviews[0]["node"]
    with urllib.request.urlopen(
        f"http://127.0.0.1:{ready['prometheus_port']}/metrics", timeout=10
    ) as response:
        assert b"rabbitmq_" in response.read()


def imported(modules: set[str], package: str) -> list[str]:
    return sorted(name for name in modules if name == package or name.startswith(package + "."))


def test_serve_without_management_and_prometheus_imports_none_of_their_libraries(tmp_path: Path) -> None:
    ready, modules = serve_and_list_modules(tmp_path, "--management-port", "-1", "--prometheus-port", "-1")
    assert ready["management_port"] is None
    assert "broker.node" in modules  # the real serve path ran
    assert {package: imported(modules, package) for package in UNUSED} == {package: [] for package in UNUSED}


def test_everything_off_imports_no_store_either(tmp_path: Path) -> None:
    _ready, modules = serve_and_list_modules(
        tmp_path, "--management-port", "-1", "--prometheus-port", "-1", "--data-dir", "none"
    )
    assert imported(modules, "sqlite3") == []
    assert imported(modules, "broker.storage") == []


def test_the_journal_is_imported_once_it_is_on(tmp_path: Path) -> None:
    _ready, modules = serve_and_list_modules(
        tmp_path, "--management-port", "-1", "--prometheus-port", "-1", "--journal-dir", str(tmp_path / "j")
    )
    assert "broker.journal.service" in modules


def test_with_the_defaults_the_http_listeners_load_nothing_until_a_request(tmp_path: Path) -> None:
    ready, modules = serve_and_list_modules(tmp_path, "--management-port", "0", "--prometheus-port", "0")
    assert isinstance(ready["management_port"], int)
    assert isinstance(ready["prometheus_port"], int)
    assert {package: imported(modules, package) for package in UNUSED} == {package: [] for package in UNUSED}
    # The listeners resolve their ASCII addresses without the idna codec (broker.server.sockets); structlog's
    # optional imports of dev tools installed here are kept out (broker.cli).
    assert [imported(modules, name) for name in ("encodings.idna", "rich", "greenlet")] == [[], [], []]


def test_management_and_prometheus_on_import_their_libraries_and_answer(tmp_path: Path) -> None:
    _ready, modules = serve_and_list_modules(
        tmp_path, "--management-port", "0", "--prometheus-port", "0", probe=_http_answers
    )
    assert "aiohttp.web" in modules
    assert "prometheus_client" in modules
