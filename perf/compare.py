"""Compare WarrenMQ, RabbitMQ and garagemq with amqpperf in one sitting and write docs/benchmarks.md.

Each scenario runs on a freshly started broker after a sync of the disk (no carry-over between scenarios,
not even the previous broker's unwritten pages), the brokers taking turns within every round (the order
rotates each round); the table reports medians over rounds and WarrenMQ's ratio to each other broker.
Requires librabbitmq-dev (amqpperf), amqp-tools, Debian's rabbitmq-server and, for the third column,
Debian's garagemq (left out when not installed). `--brokers warrenmq,ceiling` adds perf/sink.c, the C sink
that gives each scenario's physical limit (no broker). Usage: `make benchmarks` or
`python perf/compare.py --rounds 3 --output docs/benchmarks.md`. When the output file holds the markers
below, only the text between them is replaced, so the rest of docs/benchmarks.md survives a re-run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUN = HERE / "run.sh"
RABBITMQ = HERE / "brokers" / "rabbitmq.sh"
LAUNCHERS = {
    "rabbitmq": RABBITMQ,
    "garagemq": HERE / "brokers" / "garagemq.sh",
    "ceiling": HERE / "brokers" / "csink.sh",
}
# LavinMQ has no Debian package: build it by hand beside the project (docs/benchmarks.md says how) and name a
# launcher of the same shape as perf/brokers/garagemq.sh (fg|start|stop PORT) in LAVINMQ_LAUNCHER.
if os.environ.get("LAVINMQ_LAUNCHER"):
    LAUNCHERS["lavinmq"] = Path(os.environ["LAVINMQ_LAUNCHER"])
# "ceiling" is perf/sink.c, no broker: the least any server can do per scenario, so WarrenMQ's ratio to it
# is the fraction of the physical limit it reaches.
NAMES = {
    "warrenmq": "WarrenMQ",
    "rabbitmq": "RabbitMQ",
    "garagemq": "garagemq",
    "lavinmq": "LavinMQ",
    "ceiling": "ceiling",
}
BEGIN = "<!-- perf/compare.py: begin -->"
END = "<!-- perf/compare.py: end -->"

# scenario -> (label, metric extractor, unit, higher is better)
METRICS = {
    "pub16": ("publish-only, 16 B", lambda d: d["rate"], "msg/s", True),
    "pub1k": ("publish-only, 1 KiB", lambda d: d["rate"], "msg/s", True),
    "pubsub": ("publish → consume, autoack", lambda d: d["rate"], "msg/s", True),
    "ack1": ("manual ack each, prefetch 100", lambda d: d["rate"], "msg/s", True),
    "ack50": ("manual ack multiple/50, prefetch 100", lambda d: d["rate"], "msg/s", True),
    "fanout": ("fanout to 10 queues", lambda d: d["deliveries_per_s"], "deliveries/s", True),
    "topic": ("topic, 10,000 bindings", lambda d: d["rate"], "msg/s", True),
    "confirm": ("persistent 1 KiB + confirms, 1,000 in flight", lambda d: d["rate"], "msg/s", True),
    "confirm1": ("persistent 1 KiB + confirms, 1 in flight", lambda d: d["rate"], "msg/s", True),
    "stream-append": (
        "stream: confirmed 1 KiB appends, 1,000 in flight",
        lambda d: d["append_rate"],
        "msg/s",
        True,
    ),
    "stream-replay": (
        "stream: replay 1 M messages of 1 KiB from first",
        lambda d: d["replay_rate"],
        "msg/s",
        True,
    ),
    "stream-append-cpu": (
        "stream: broker CPU per confirmed append",
        lambda d: d["append_cpu_us_per_msg"] if d["append_cpu_us_per_msg"] > 0 else None,
        "µs",
        False,
    ),
    "stream-replay-cpu": (
        "stream: broker CPU per replayed message",
        lambda d: d["replay_cpu_us_per_msg"] if d["replay_cpu_us_per_msg"] > 0 else None,
        "µs",
        False,
    ),
    "stream-attach-offset": (
        "stream of 1 M: attach by offset, to first delivery",
        lambda d: d["attach_offset_ms"],
        "ms",
        False,
    ),
    "stream-attach-timestamp": (
        "stream of 1 M: attach by timestamp, to first delivery",
        lambda d: d["attach_timestamp_ms"],
        "ms",
        False,
    ),
    "stream-small-attach-offset": (
        "stream of 10 k: attach by offset, to first delivery",
        lambda d: d["attach_offset_ms"],
        "ms",
        False,
    ),
    "stream-small-attach-timestamp": (
        "stream of 10 k: attach by timestamp, to first delivery",
        lambda d: d["attach_timestamp_ms"],
        "ms",
        False,
    ),
    "pubsub-lat": ("p99 latency at 10k msg/s", lambda d: d["lat_us"]["p99"], "µs", False),
    "fanout-lat": (
        "fanout to 10 queues, p50 latency at 20k deliveries/s",
        lambda d: d["lat_us"]["p50"],
        "µs",
        False,
    ),
    "conns": ("memory per idle connection (1,000)", lambda d: d["kb_per_conn"], "KiB", False),
    "coldstart": (
        "cold start to first handshake",
        lambda d: d["startup_ms"] if d.get("ready") else None,
        "ms",
        False,
    ),
}
# A run.sh scenario that yields several rows: the rows it fills (the others fill the row of their name).
ROWS = {
    "stream": [
        "stream-append",
        "stream-replay",
        "stream-append-cpu",
        "stream-replay-cpu",
        "stream-attach-offset",
        "stream-attach-timestamp",
    ],
    "stream-small": ["stream-small-attach-offset", "stream-small-attach-timestamp"],
}
DEFAULT = [name for name in METRICS if not name.startswith("stream")] + list(ROWS)
# Rows whose comparison is not like-for-like yet, with the reason printed under the table.
CAVEATS: dict[str, str] = {}


def _free(port: int) -> None:
    for _ in range(100):
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False
        ).stdout
        if not out.strip():
            return
        time.sleep(0.1)


def _warrenmq_cmd(port: int, data_dir: str) -> list[str]:
    """A fresh data directory per start, as RabbitMQ gets a fresh node directory (brokers/rabbitmq.sh)."""
    return [
        sys.executable,
        "-m",
        "broker",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--data-dir",
        data_dir,
        # What users run (statistics sampled behind the HTTP listeners), on ephemeral ports; no system
        # rabbitmq.conf, so the figures do not depend on what else is installed here.
        "--management-port",
        "0",
        "--prometheus-port",
        "0",
        "--config-file",
        "none",
        # e.g. WARRENMQ_ARGS="--fsync batch": confirm once written to the OS, as osiris confirms a stream
        # chunk once written (RabbitMQ relies on replication, not fsync, for streams).
        *os.environ.get("WARRENMQ_ARGS", "").split(),
    ]


def _amqpperf(port: int, scenario: str, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        ["bash", str(RUN), "127.0.0.1", str(port), scenario],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    ).stdout
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": "no output"}


def run_scenario(broker: str, scenario: str, port: int) -> dict[str, object]:
    # A settled disk for each run: what the broker before wrote without an fsync (LavinMQ confirms before
    # one) is otherwise written back by the kernel during this run, and queues ahead of its fsyncs.
    os.sync()
    env = dict(os.environ)
    if scenario == "coldstart":
        if broker == "warrenmq":
            env["BROKER_CMD"] = " ".join(_warrenmq_cmd(port, tempfile.mkdtemp(prefix="warrenmq-perf-")))
        else:
            env["BROKER_CMD"] = f"bash {LAUNCHERS[broker]} fg {port}"
        _free(port)
        return _amqpperf(port, scenario, env)
    if broker == "warrenmq":
        with tempfile.TemporaryDirectory(prefix="warrenmq-perf-") as data_dir:
            for _attempt in range(5):
                process = subprocess.Popen(
                    _warrenmq_cmd(port, data_dir),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                assert process.stdout is not None
                if process.stdout.readline():
                    break
                # No ready line: it could not listen yet (the RabbitMQ node just stopped on this port).
                process.wait(timeout=30)
                time.sleep(2)
            try:
                env["BROKER_PID"] = str(process.pid)
                return _amqpperf(port, scenario, env)
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
                _free(port)
    launcher = str(LAUNCHERS[broker])
    subprocess.run(["bash", launcher, "start", str(port)], check=True, capture_output=True, timeout=180)
    try:
        return _amqpperf(port, scenario, env)
    finally:
        subprocess.run(["bash", launcher, "stop", str(port)], capture_output=True, timeout=120, check=False)
        _free(port)


def _version(cmd: list[str]) -> str:
    try:
        return (
            subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
            .stdout.strip()
            .splitlines()[0]
        )
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def render(
    results: dict[str, dict[str, list[float]]], brokers: list[str], rounds: int, argv: list[str]
) -> str:
    today = datetime.date.today().isoformat()
    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    versions = {
        "rabbitmq": f"RabbitMQ {_version(['dpkg-query', '-W', '-f', '${Version}', 'rabbitmq-server'])} "
        "(Debian, default config, no plugins)",
        "garagemq": f"garagemq {_version(['dpkg-query', '-W', '-f', '${Version}', 'garagemq'])} "
        "(Debian, its packaged config, in-memory queues)",
        "lavinmq": os.environ.get("LAVINMQ_DESCRIPTION", "LavinMQ (built by hand, single-threaded)"),
        "ceiling": "the ceiling: perf/sink.c (cc -O2), a C sink that answers only the frames each scenario "
        "needs and stores nothing; the ratio to it is the fraction of the physical limit",
    }
    others = [broker for broker in brokers if broker != "warrenmq"]
    names = [NAMES[broker] for broker in brokers]
    lines = [
        f"# Benchmarks: {', '.join(names)}; same machine, same generator, one sitting",
        "",
        f"Measured {today} on {os.cpu_count()} cores ({cpu}), Python {platform.python_version()},",
        *(f"{versions[broker]}," for broker in others),
        "WarrenMQ as `warrenmq serve` ships (statistics, permissions, alarms on, tracing off), a fresh",
        "data directory per start.",
        "Broker and generator share the cores. Generator: amqpperf (`perf/amqpperf.c`, librabbitmq).",
        f"Medians of {rounds} round(s); each scenario runs on a freshly started broker after a sync of the",
        "disk, the brokers taking turns within each round. Ratio = WarrenMQ / other for rates; for latency,",
        "memory and start-up other / WarrenMQ (above 1: WarrenMQ wins).",
        "",
        "| Scenario | "
        + " | ".join(names)
        + " | "
        + " | ".join(f"vs {NAMES[o]}" for o in others)
        + " | Unit |",
        "|---|" + "---|" * (len(brokers) + len(others)) + "---|",
    ]
    for scenario, (label, _, unit, higher) in METRICS.items():
        if scenario not in results or not results[scenario].get("warrenmq"):
            continue
        medians = {b: statistics.median(v) for b, v in results[scenario].items() if v}
        cells = [f"{medians[b]:,.1f}" if b in medians else "—" for b in brokers]
        wm = medians["warrenmq"]
        ratios = []
        for other in others:
            om = medians.get(other)
            ratio = (wm / om if higher else om / wm) if om and wm else None
            ratios.append(f"{ratio:.2f}×" if ratio is not None else "—")  # noqa: RUF001
        mark = " ¹" if scenario in CAVEATS else ""
        lines.append(f"| {label}{mark} | " + " | ".join(cells + ratios) + f" | {unit} |")
    notes = sorted({CAVEATS[s] for s in results if s in CAVEATS})
    lines += ["", *(f"¹ {note}" for note in notes)]
    # The launcher LavinMQ ran from, when it ran: the command is then the one that made this table.
    launcher = f"LAVINMQ_LAUNCHER={LAUNCHERS['lavinmq']} " if "lavinmq" in LAUNCHERS else ""
    lines += [
        "",
        "Reproduce: `make benchmarks` (this table), or by hand:",
        "",
        "<!-- not-runnable: a benchmark (minutes of a quiet machine; it measures, it does not pass) -->",
        "```sh",
        "apt-get install -y librabbitmq-dev amqp-tools rabbitmq-server garagemq",
        f"{launcher}python perf/compare.py {' '.join(argv)}".rstrip(),
        "bash perf/run.sh 127.0.0.1 PORT pub16 pubsub ...     # one broker, raw JSON lines",
        "```",
        "",
    ]
    return "\n".join(lines)


def write(output: Path, text: str) -> None:
    """Replace what lies between the markers when ``output`` has them, else write the whole file."""
    block = f"{BEGIN}\n{text}{END}\n"
    current = output.read_text() if output.exists() else ""
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        output.write_text(head + block + ("\n" + tail if tail else ""))
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(block)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=5698)
    parser.add_argument(
        "--brokers",
        default="warrenmq,rabbitmq,garagemq" if shutil.which("garagemq") else "warrenmq,rabbitmq",
        help="comma-separated, from warrenmq, rabbitmq, garagemq, lavinmq (with LAVINMQ_LAUNCHER set), "
        "ceiling (the C sink); default: the installed brokers",
    )
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--raw", type=Path, default=None, help="append every raw JSON result here")
    args = parser.parse_args()
    brokers = [name for name in args.brokers.split(",") if name]
    launchable = {"warrenmq", *LAUNCHERS}
    unknown = [name for name in brokers if name not in NAMES or name not in launchable]
    if unknown or "warrenmq" not in brokers:
        parser.error(
            f"--brokers: warrenmq and any of rabbitmq, garagemq, lavinmq (LAVINMQ_LAUNCHER), ceiling "
            f"(got {args.brokers})"
        )
    results: dict[str, dict[str, list[float]]] = {}
    for round_index in range(args.rounds):
        for scenario in args.scenarios:
            shift = round_index % len(brokers)
            for broker in brokers[shift:] + brokers[:shift]:
                data = run_scenario(broker, scenario, args.port)
                data["broker"], data["round"] = broker, round_index
                if args.raw:
                    with args.raw.open("a") as raw:
                        raw.write(json.dumps(data) + "\n")
                for row in ROWS.get(scenario, [scenario]):
                    try:
                        value = float(METRICS[row][1](data))  # type: ignore[no-untyped-call]
                    except (KeyError, TypeError, ValueError):
                        print(f"{broker} {row}: no figure ({data.get('error', data)})", file=sys.stderr)
                        continue
                    results.setdefault(row, {}).setdefault(broker, []).append(value)
                    print(f"round {round_index + 1} {broker:8} {row:10} {value:,.1f}", flush=True)
    write(args.output, render(results, brokers, args.rounds, sys.argv[1:]))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
