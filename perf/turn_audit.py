"""What one event-loop turn costs the broker per message, for the C load generator's scenarios.

For each scenario (perf/run.sh's), on a fresh ``warrenmq serve`` from ``--tree`` (built in place, compiled or
not), two runs:

1. **unperturbed**, with the counting allocator of ``perf/alloc_probe`` loaded: the interpreter's
   allocations per message (object domain: PyObject_Malloc, nearly every object not taken from a free list;
   mem domain: PyMem_Malloc, list and buffer storage), the socket reads and writes per message as the kernel
   counted them (``/proc/PID/io`` syscr/syscw: libuv reads and writes TCP streams with read/write/writev,
   which these count), the voluntary context switches per message (the loop blocking in epoll_wait with
   nothing to do), and the broker's CPU µs per message (user+system; the probe's counting included, so
   compare builds with perf/ab.py, not with this figure);
2. **under** ``strace -c -f``: every syscall by kind, per message. ptrace makes each syscall far dearer, so
   the broker falls behind and handles more messages per turn than unperturbed: these kinds are the shape,
   the first run's reads and writes the amounts. ``epoll_wait`` counts loop turns that polled (uvloop polls
   once per turn).

"Per message" is per message the broker moved as perf/ab.py counts it: published for pub16 and confirm,
delivered for pubsub/ack1/ack50, *published* for fanout (each makes ten deliveries).

    python perf/turn_audit.py --tree . pub16 pubsub ack1 ack50 fanout confirm
    python perf/turn_audit.py --tree . --no-strace pubsub          # the unperturbed run only
    WARRENMQ_PURE=1 python perf/turn_audit.py --tree /tmp/pure-tree pubsub   # the pure-Python variant

confirm runs with a data directory (``--fsync always``), the others with ``--data-dir none`` as perf/ab.py's.
The probe is built with the C compiler into $AMQPPERF_WORK/alloc_probe (as run.sh builds amqpperf).

``--where`` also samples one object allocation in 61 with its native stack (mypyc's CPyDef_* functions, the C
wire loops, uvloop) and prints the sites per message, most first: what to remove next.

First measurement (compiled build, 2026-11-29, a shared 2-core VM at load 3-4; per message moved):

| scenario | obj allocs | mem allocs | socket reads | socket writes | strace epoll_wait | store pread/pwrite |
|---|---:|---:|---:|---:|---:|---:|
| pub16 | 6.5 | 1.03 | 0.000 | 0.000 | 0.000 | |
| pubsub | 12.9 | 1.11 | 0.000 | 0.002 | 0.003 | |
| ack1 | 17.4 | 1.36 | 0.011 | 0.010 | 0.020 | |
| ack50 | 16.6 | 1.41 | 0.011 | 0.010 | 0.021 | |
| fanout (per published) | 58.6 | 1.75 | 0.006 | 0.015 | 0.009 | |
| confirm | 22.3 | 1.15 | 0.007 | 0.004 | 0.011 | 1.0 / 2.0 |

At full rate a turn already reads once and writes once per connection for hundreds of messages: the socket
syscalls are not the per-message cost. The Python objects are (the turn's figures per change are in the
commit messages that removed them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUN = HERE / "run.sh"
PROBE_DIR = HERE / "alloc_probe"
WORK = Path(os.environ.get("AMQPPERF_WORK", "/tmp/amqpperf"))
SCENARIOS = ["pub16", "pubsub", "ack1", "ack50", "fanout", "confirm"]
# The field of amqpperf's JSON line that counts the messages the broker moved (perf/ab.py's MOVED).
MOVED = {
    "pub16": "count",
    "pub1k": "count",
    "pubsub": "received",
    "ack1": "received",
    "ack50": "received",
    "fanout": "count",
    "topic": "count",
    "confirm": "count",
}
# strace -c's kinds, grouped as the report reads them.
KINDS = {
    "read": ("read", "readv", "recvfrom", "recvmsg"),
    "write": ("write", "writev", "sendto", "sendmsg"),
    "epoll_wait": ("epoll_wait", "epoll_pwait", "epoll_pwait2"),
    "epoll_ctl": ("epoll_ctl",),
    "futex": ("futex",),
    "fsync": ("fsync", "fdatasync", "sync_file_range"),
    "file": ("pread64", "pwrite64", "preadv", "pwritev"),  # the store's (SQLite's) page reads and writes
}


def build_probe() -> Path:
    """Compile perf/alloc_probe/_allocprobe.c for this interpreter, once per change of the source."""
    source = PROBE_DIR / "_allocprobe.c"
    out_dir = WORK / "alloc_probe"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / ("_allocprobe" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        include = sysconfig.get_paths()["include"]
        cc = os.environ.get("CC", "cc")
        subprocess.run(
            [cc, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", str(target), str(source)], check=True
        )
    return out_dir


def _proc_counts(pid: int) -> dict[str, float]:
    """CPU seconds, read/write syscalls and voluntary context switches of ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches"):
                switches += int(line.split()[1])
    return {
        "cpu_s": (int(fields[11]) + int(fields[12])) / tick,
        "syscr": float(io["syscr"]),
        "syscw": float(io["syscw"]),
        "vcsw": float(switches),
    }


def _alloc_counts(path: Path) -> tuple[int, ...]:
    return struct.unpack("8Q", path.read_bytes()[:64])


def _set_sampling(path: Path, on: bool) -> None:
    """Slot 7 of the probe's counters: sample allocation sites while non-zero."""
    with path.open("r+b") as counters:
        counters.seek(56)
        counters.write(struct.pack("Q", int(on)))


# One object-domain allocation in SAMPLE_EVERY is sampled (_allocprobe.c).
SAMPLE_EVERY = 61


def sites(path: Path, moved: int, top: int = 30) -> list[tuple[float, str]]:
    """The sampled allocation sites, as allocations per moved message, most first."""
    counted: dict[str, int] = {}
    for line in path.read_text().splitlines():
        counted[line] = counted.get(line, 0) + 1
    ranked = sorted(counted.items(), key=lambda item: -item[1])[:top]
    return [(count * SAMPLE_EVERY / moved, site) for site, count in ranked]


def _wait_free(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False)
        if not out.stdout.strip():
            return
        time.sleep(0.1)


def parse_strace(text: str) -> dict[str, int]:
    """strace -c's table: calls per syscall name."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        # % time, seconds, usecs/call, calls, [errors], syscall
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if match and match.group(2) != "total":
            calls[match.group(2)] = int(match.group(1))
    return calls


def run_scenario(
    tree: Path, scenario: str, port: int, probe_dir: Path | None, strace: bool, where: bool = False
) -> dict[str, Any]:
    """One run of ``scenario`` on a fresh broker; counters per moved message."""
    paths = [str(tree)]
    env = dict(os.environ)
    work = Path(tempfile.mkdtemp(prefix="turn-audit-"))
    counts_file = work / "allocs"
    if probe_dir is not None:
        paths += [str(PROBE_DIR), str(probe_dir)]
        env["ALLOCPROBE_OUT"] = str(counts_file)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", "error", "--config-file", "none"]
    cmd += ["--management-port", "0", "--prometheus-port", "-1"]
    if scenario.startswith("confirm"):
        cmd += ["--data-dir", str(work / "data"), "--fsync", "always"]
    else:
        cmd += ["--data-dir", "none"]
    broker = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert broker.stdout is not None
    broker.stdout.readline()  # the broker prints its address once it listens
    tracer = None
    trace_out = work / "strace.txt"
    try:
        if strace:
            tracer = subprocess.Popen(
                ["strace", "-c", "-f", "-p", str(broker.pid), "-o", str(trace_out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert tracer.stderr is not None
            tracer.stderr.readline()  # "strace: Process N attached": tracing from here on
        before = _proc_counts(broker.pid)
        allocs_before = _alloc_counts(counts_file) if probe_dir is not None else None
        if where and probe_dir is not None:
            _set_sampling(counts_file, True)
        text = subprocess.run(
            ["bash", str(RUN), "127.0.0.1", str(port), scenario],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=dict(os.environ, AMQPPERF_WORK=str(WORK)),
        ).stdout
        after = _proc_counts(broker.pid)
        allocs_after = _alloc_counts(counts_file) if probe_dir is not None else None
        if where and probe_dir is not None:
            _set_sampling(counts_file, False)
    finally:
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=60)
        broker.send_signal(signal.SIGTERM)
        broker.wait(timeout=60)
        _wait_free(port)
    lines = [line for line in text.splitlines() if line.startswith("{")]
    data: dict[str, Any] = json.loads(lines[-1]) if lines else {"error": "no output"}
    moved = int(data.get(MOVED.get(scenario, "count"), 0) or 0)
    result: dict[str, Any] = {"scenario": scenario, "moved": moved, "rate": data.get("rate")}
    if "error" in data or not moved:
        result["error"] = data.get("error", "nothing moved")
        return result
    result["cpu_us"] = (after["cpu_s"] - before["cpu_s"]) / moved * 1e6
    for key in ("syscr", "syscw", "vcsw"):
        result[key] = (after[key] - before[key]) / moved
    if allocs_before is not None and allocs_after is not None:
        delta = [b - a for a, b in zip(allocs_before, allocs_after, strict=True)]
        result["obj_allocs"] = delta[0] / moved
        result["mem_allocs"] = (delta[3] + delta[4]) / moved  # mallocs and reallocs of storage
    sites_file = counts_file.with_suffix(".sites")
    if where and sites_file.exists():
        result["sites"] = sites(sites_file, moved)
    if tracer is not None:
        calls = parse_strace(trace_out.read_text())
        result["strace"] = {name: count / moved for name, count in sorted(calls.items())}
        for kind, names in KINDS.items():
            result[f"s_{kind}"] = sum(calls.get(name, 0) for name in names) / moved
        grouped = {name for names in KINDS.values() for name in names}
        result["s_other"] = sum(count for name, count in calls.items() if name not in grouped) / moved
    return result


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| scenario | rate | CPU µs/msg | reads/msg | writes/msg | vol. ctx sw/msg | obj allocs/msg "
        "| mem allocs/msg | strace: read | write | epoll_wait | epoll_ctl | futex | fsync | file | other |"
    )
    rows = [head, "|" + "---|" * 17]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['scenario']} | error: {r['error']} |")
            continue

        def cell(key: str, digits: int = 3, row: dict[str, Any] = r) -> str:
            value = row.get(key)
            return "" if value is None else f"{value:.{digits}f}"

        rows.append(
            f"| {r['scenario']} | {r['rate'] or 0:,.0f} | {cell('cpu_us', 2)} | {cell('syscr')} | "
            f"{cell('syscw')} | {cell('vcsw')} | {cell('obj_allocs', 1)} | {cell('mem_allocs', 2)} | "
            + " | ".join(cell(f"s_{kind}") for kind in [*KINDS, "other"])
            + " |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("scenarios", nargs="*", default=SCENARIOS)
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the WarrenMQ source tree to serve")
    parser.add_argument("--port", type=int, default=5798)
    parser.add_argument("--no-strace", action="store_true", help="skip the run under strace -c")
    parser.add_argument("--raw", type=Path, default=None, help="append each result as a JSON line here")
    parser.add_argument("--where", action="store_true", help="print where the allocations come from")
    args = parser.parse_args()
    probe_dir = build_probe()
    results = []
    for scenario in args.scenarios:
        result = run_scenario(
            args.tree.resolve(), scenario, args.port, probe_dir, strace=False, where=args.where
        )
        for per_message, site in result.pop("sites", []):
            print(f"{scenario}: {per_message:6.2f} allocs/msg  {site}")
        if not args.no_strace and "error" not in result:
            traced = run_scenario(args.tree.resolve(), scenario, args.port, None, strace=True)
            if "error" in traced:  # a traced broker answers slowly; the generator's first call may time out
                traced = run_scenario(args.tree.resolve(), scenario, args.port, None, strace=True)
            result.update({k: v for k, v in traced.items() if k == "strace" or k.startswith("s_")})
            result["strace_rate"] = traced.get("rate")
        print(json.dumps(result), flush=True)
        if args.raw is not None:
            with args.raw.open("a") as raw:
                raw.write(json.dumps(result) + "\n")
        results.append(result)
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
