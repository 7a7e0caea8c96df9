"""Startup benchmark (not a test): how soon a client can use `warrenmq serve`, what its start-up imports cost,
and how much memory it holds once ready.

- handshake: `python -m broker serve --port 0 ...` spawned → readiness line read → first AMQP handshake
  completed (connection.open-ok received, ``broker.healthcheck.check``), measured from just before the spawn;
  the median of ``--runs`` starts, with the default configuration (management and Prometheus on ephemeral
  ports, the SQLite store under a fresh temporary directory) and with all three off;
- imports: ``python -X importtime`` on the same command, each module's own ("self") import time summed per
  top-level package (``broker.node`` counts for ``broker``), the median over ``--import-runs``;
- RSS at ready: the broker process's VmRSS once its first handshake completed;
- with management on, the time to a first ``/api/overview`` answered, right after that handshake: the
  management application is built at its first request (broker.management.lazy_http).
- the floor: spawn to a line from a process that only imports what every start loads (asyncio, sqlite3,
  structlog, uvloop), in the same rounds: the machine's speed at the time, and the part no broker change cuts;
- in-process (``--in-process``): `EmbeddedBroker().start()` and `BrokerThread().start()` to a first handshake.
- instructions (``--instructions``): the instructions the process executes from its start to the readiness
  line, counted by valgrind's callgrind (the process exits there). Unlike the times above they do not depend
  on the machine's load, so they compare two trees (``--tree``) on a busy machine too.

Usage: .venv/bin/python benchmarks/startup.py [--runs 7] [--import-runs 3] [--markdown] [--in-process]
       [--instructions] [--tree /tmp/old-tree]   # another tree (e.g. `git archive` of an earlier commit)
       [--python /tmp/wq-deb/bin/python]        # another interpreter with WarrenMQ installed
Target: the median to the first handshake under 200 ms with the default configuration, on an
idle machine (the load average is printed with the results, before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from broker.healthcheck import check
from broker.testing import BrokerThread, EmbeddedBroker

BASE = [
    sys.executable,
    "-m",
    "broker",
    "serve",
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--config-file",
    "none",
]
# What `warrenmq serve` runs by default, on ephemeral ports (other brokers may hold 15672/15692 here).
DEFAULT = ["--management-port", "0", "--prometheus-port", "0"]
OFF = ["--management-port", "-1", "--prometheus-port", "-1", "--data-dir", "none"]
# A start reads its modules' bytecode from a cache, as an installed broker does; PYTHONDONTWRITEBYTECODE (set
# in some shells) would make every start compile the whole tree again (~2 s). A private cache leaves the
# source tree clean; the first, uncounted start of each configuration fills it.
CHILD_ENV = {
    **{
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    },
    "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "warrenmq-startup-pycache"),
}
CHILD_CWD: str | None = None  # None: this process's working directory (the source tree, for `make`)
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


@dataclass(frozen=True, slots=True)
class Start:
    ready_s: float  # spawn -> readiness line
    handshake_s: float  # spawn -> connection.open-ok
    rss_kib: int  # VmRSS once the first handshake completed
    cpu_s: float  # CPU time the broker's threads used until then: what load on the machine inflates least
    management_s: float | None  # spawn -> first /api/overview answered, after the handshake (None: off)


@contextmanager
def spawned(
    extra: list[str], python_flags: tuple[str, ...] = (), stderr: int | IO[str] = subprocess.DEVNULL
) -> Iterator[subprocess.Popen[str]]:
    """The broker with ``extra`` arguments (a fresh data directory unless they say none), stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="warrenmq-startup-") as data_dir:
        data = [] if "--data-dir" in extra else ["--data-dir", data_dir]
        command = [BASE[0], *python_flags, *BASE[1:], *extra, *data]
        # `-m` puts the working directory first on sys.path: run in the tree under test (--tree), or
        # outside any tree for another interpreter's installed WarrenMQ (--python).
        cwd = CHILD_ENV.get("PYTHONPATH") or CHILD_CWD
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=CHILD_ENV, cwd=cwd
        )
        try:
            yield proc
        finally:
            proc.terminate()
            proc.wait()


def _ready(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("{"):
        raise RuntimeError(f"no readiness line from the broker (exit {proc.poll()}): {line!r}")
    ready: dict[str, object] = json.loads(line)
    return ready


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cpu_s(pid: int) -> float:
    """On-CPU time of every thread of ``pid`` (/proc/PID/task/*/schedstat, nanoseconds)."""
    total_ns = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as schedstat:
            total_ns += int(schedstat.read().split()[0])
    return total_ns / 1e9


def one_start(extra: list[str]) -> Start:
    began = time.perf_counter()
    with spawned(extra) as proc:
        ready = _ready(proc)
        ready_s = time.perf_counter() - began
        check(f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/")
        handshake_s = time.perf_counter() - began
        rss, cpu = rss_kib(proc.pid), cpu_s(proc.pid)
        management_s = None
        if ready.get("management_port"):
            # The management application is built at its first request (broker.management.lazy_http).
            overview(int(str(ready["management_port"])))
            management_s = time.perf_counter() - began
        return Start(ready_s, handshake_s, rss, cpu, management_s)


# What any start pays before the broker's own code: the interpreter and the libraries `serve` always loads
# (as it loads them: without rich and greenlet). Measured in the same rounds, it shows how fast the machine
# was; the broker's own share is the difference.
FLOOR = (
    "import sys; sys.modules['rich'] = sys.modules['greenlet'] = None;"
    "import asyncio, sqlite3, structlog, uvloop; print('ready', flush=True)"
)


def floor_s() -> float:
    began = time.perf_counter()
    proc = subprocess.Popen([BASE[0], "-c", FLOOR], stdout=subprocess.PIPE, text=True, env=CHILD_ENV)
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - began
    proc.wait()
    return elapsed


def overview(port: int) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/overview",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def import_times(extra: list[str]) -> tuple[dict[str, float], int]:
    """Milliseconds of own import time per top-level package up to the readiness line, and the number of
    modules imported."""
    # A file, not a pipe: -X importtime writes more than a pipe holds before the readiness line.
    with tempfile.TemporaryFile("w+") as log, spawned(extra, ("-X", "importtime"), log) as proc:
        _ready(proc)
        log.flush()
        log.seek(0)
        err = log.read()
    per_package: dict[str, float] = defaultdict(float)
    modules = 0
    for line in err.splitlines():
        match = IMPORT_LINE.match(line)
        if match is None:
            continue
        modules += 1
        per_package[match.group(4).split(".")[0]] += int(match.group(1)) / 1000
    return dict(per_package), modules


def median_import_times(extra: list[str], runs: int) -> tuple[dict[str, float], int]:
    samples = [import_times(extra) for _ in range(runs)]
    packages = {name for sample, _ in samples for name in sample}
    return (
        {name: statistics.median(sample.get(name, 0.0) for sample, _ in samples) for name in packages},
        int(statistics.median(count for _, count in samples)),
    )


# Runs `warrenmq serve ...` as `python -m broker` does, and ends the process with its readiness line.
TO_READY = """
import os, runpy, sys
class Out:
    def __init__(self, out): self.out = out
    def write(self, text):
        if text.startswith('{"event": "ready"'):
            self.out.write(text); self.out.flush(); os._exit(0)
        return self.out.write(text)
    def __getattr__(self, name): return getattr(self.out, name)
sys.stdout = Out(sys.stdout)
sys.argv = ["warrenmq", *sys.argv[1:]]
runpy.run_module("broker", run_name="__main__", alter_sys=True)
"""


def instructions(extra: list[str] | None) -> int:
    """Instructions executed from the process's start to its readiness line (valgrind --tool=callgrind);
    ``None``: the floor's, to its line."""
    with tempfile.TemporaryDirectory(prefix="warrenmq-callgrind-") as scratch:
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={os.path.join(scratch, 'callgrind.out')}",
        ]
        if extra is None:
            command = [*valgrind, BASE[0], "-c", FLOOR.replace("'ready'", '\'{"event": "ready"}\'')]
        else:
            data = [] if "--data-dir" in extra else ["--data-dir", os.path.join(scratch, "data")]
            command = [*valgrind, BASE[0], "-c", TO_READY, *BASE[3:], *extra, *data]
        cwd = CHILD_ENV.get("PYTHONPATH") or CHILD_CWD
        done = subprocess.run(command, capture_output=True, text=True, env=CHILD_ENV, cwd=cwd, check=False)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if collected is None or '"ready"' not in done.stdout:
        raise RuntimeError(f"no count from callgrind (exit {done.returncode}): {done.stderr[-500:]}")
    return int(collected.group(1))


def report_instructions(runs: int) -> None:
    for name, extra in {"default": DEFAULT, "all off": OFF, "floor": None}.items():
        instructions(extra)  # the bytecode cache
        counts = sorted(instructions(extra) for _ in range(runs))
        print(f"{name}: instructions to the readiness line  {statistics.median(counts) / 1e6:,.1f} M", end="")
        print(f" (min {counts[0] / 1e6:,.1f}, max {counts[-1] / 1e6:,.1f}, {runs} runs)")


async def in_process_start() -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    began = time.perf_counter()
    broker = await EmbeddedBroker(record_history=False).start()
    started = time.perf_counter() - began
    # The blocking handshake client runs in a worker thread while this loop serves it.
    await loop.run_in_executor(None, check, broker.url)
    handshake = time.perf_counter() - began
    await broker.stop()
    return started, handshake


def thread_start() -> float:
    began = time.perf_counter()
    broker = BrokerThread().start()
    check(broker.url)
    elapsed = time.perf_counter() - began
    broker.stop()
    return elapsed


def _ms(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"{statistics.median(ms):7.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f})"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def report(runs: int, import_runs: int, markdown: bool) -> None:
    configs = {"default": DEFAULT, "all off": OFF}
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)")
    for extra in configs.values():
        one_start(extra)  # warm-up: the bytecode cache, the page cache
    starts: dict[str, list[Start]] = {name: [] for name in configs}
    floors: list[float] = []
    for _ in range(runs):
        for name, extra in configs.items():  # alternate, so that a burst of load hits both alike
            starts[name].append(one_start(extra))
        floors.append(floor_s())
    imports = {name: median_import_times(extra, import_runs) for name, extra in configs.items()}
    print(f"load average after:  {load()}")
    print(f"floor (python + asyncio, sqlite3, structlog, uvloop; no broker): {_ms(floors)}")
    if markdown:
        _markdown(runs, import_runs, starts, imports)
        return
    for name, values in starts.items():
        print(f"{name}: spawn -> readiness line   {_ms([s.ready_s for s in values])}")
        print(f"{name}: spawn -> first handshake  {_ms([s.handshake_s for s in values])}")
        print(f"{name}: CPU time to handshake     {_ms([s.cpu_s for s in values])}")
        if values[0].management_s is not None:
            print(f"{name}: then first /api/overview  {_ms([s.management_s or 0.0 for s in values])}")
        print(
            f"{name}: RSS at ready              {statistics.median(s.rss_kib for s in values) / 1024:.1f} MiB"
        )
        per_package, modules = imports[name]
        print(f"{name}: {modules} modules, own import time per top-level package (median of {import_runs}):")
        for package, ms in sorted(per_package.items(), key=lambda item: -item[1])[:15]:
            print(f"    {package:<28} {ms:7.1f} ms")
        print(f"    {'(total)':<28} {sum(per_package.values()):7.1f} ms")


def _markdown(
    runs: int,
    import_runs: int,
    starts: dict[str, list[Start]],
    imports: dict[str, tuple[dict[str, float], int]],
) -> None:
    names = list(starts)
    print(f"\n| median of {runs} | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))

    def median(values: list[float | None], scale: float) -> str:
        known = [value for value in values if value is not None]
        return f"{statistics.median(known) * scale:,.1f}" if known else "off"

    rows = {
        "spawn → readiness line (ms)": [median([s.ready_s for s in starts[n]], 1000) for n in names],
        "spawn → first handshake (ms)": [median([s.handshake_s for s in starts[n]], 1000) for n in names],
        "CPU time to first handshake (ms)": [median([s.cpu_s for s in starts[n]], 1000) for n in names],
        "spawn → handshake → first /api/overview (ms)": [
            median([s.management_s for s in starts[n]], 1000) for n in names
        ],
        "RSS at ready (MiB)": [median([s.rss_kib for s in starts[n]], 1 / 1024) for n in names],
        "modules imported at ready": [str(imports[n][1]) for n in names],
    }
    for label, cells in rows.items():
        print(f"| {label} | " + " | ".join(cells) + " |")
    packages = sorted(
        {p for n in names for p in imports[n][0]},
        key=lambda p: -max(imports[n][0].get(p, 0.0) for n in names),
    )
    print(f"\n| own import time, ms (median of {import_runs}) | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for package in packages[:15]:
        print(f"| {package} | " + " | ".join(f"{imports[n][0].get(package, 0.0):.1f}" for n in names) + " |")
    totals = [sum(imports[n][0].values()) for n in names]
    print("| (all) | " + " | ".join(f"{total:.1f}" for total in totals) + " |")


def in_process(runs: int) -> None:
    embedded = [asyncio.run(in_process_start()) for _ in range(runs)]
    print(f"in-process EmbeddedBroker.start()           {_ms([e[0] for e in embedded])}")
    print(f"in-process start -> first handshake done    {_ms([e[1] for e in embedded])}")
    print(f"BrokerThread start -> first handshake done  {_ms([thread_start() for _ in range(runs)])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7, help="starts per configuration (default 7)")
    parser.add_argument("--import-runs", type=int, default=3, help="-X importtime starts per configuration")
    parser.add_argument("--markdown", action="store_true", help="tables for docs/benchmarks.md")
    parser.add_argument("--tree", help="a WarrenMQ source tree to start instead of the installed one")
    parser.add_argument(
        "--python",
        help="start the broker with this interpreter, whose environment has WarrenMQ installed (a venv made "
        "from Debian's python3.11, as the image's; the floor runs on it too)",
    )
    parser.add_argument("--in-process", action="store_true", help="also the embedded and thread starts")
    parser.add_argument(
        "--instructions", action="store_true", help="only count instructions to ready (valgrind), 3 runs"
    )
    args = parser.parse_args()
    if args.tree:
        # Ahead of the editable install's finder: the tree's own packages and extensions serve.
        CHILD_ENV["PYTHONPATH"] = os.path.abspath(args.tree)
    if args.python:
        global CHILD_CWD
        BASE[0] = args.python
        CHILD_CWD = tempfile.mkdtemp(prefix="warrenmq-startup-cwd-")
    if args.instructions:
        report_instructions(3)
        return
    report(args.runs, args.import_runs, args.markdown)
    if args.in_process:
        in_process(args.runs)


if __name__ == "__main__":
    main()
