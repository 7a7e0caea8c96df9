"""`rabbitmq-diagnostics` (and the same commands under `rabbitmqctl`): ping, check_running,
check_port_connectivity, check_local_alarms, status and await_startup, with RabbitMQ's texts, its
``--formatter json`` objects and its exit codes (0 ok, 64 usage, 69 node unavailable or check failed),
compared with RabbitMQ 3.10's CLI in tests/integration/test_diagnostics.py.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.config.plugins import started_plugins
from broker.ctl.api import Api, ApiFailure, Unavailable, quote
from broker.ctl.probe import ProbeFailed, local_alarms, port_open, server_properties
from broker.ctl.target import Target, find_target

EX_OK, EX_USAGE, EX_UNAVAILABLE = 0, 64, 69
DEFAULT_TIMEOUT_S = {"await_startup": 300.0}
UNREACHABLE = (
    "Error: unable to perform an operation on node '{node}'. Please see diagnostics information and "
    "suggestions below.\n\nMost common reasons for this are:\n\n * Target node is unreachable (e.g. due to "
    "hostname resolution, TCP connection or firewall issues)\n * Target node is not running\n\n"
    "DIAGNOSTICS\n===========\n\nattempted to contact: [{node}] on {host}:{port}: {reason}\n"
)


@dataclass
class Options:
    command: str = ""
    node: str | None = None
    quiet: bool = False
    silent: bool = False
    formatter: str = "string"
    timeout_s: float | None = None
    args: tuple[str, ...] = ()
    vhost: str = "/"
    no_table_headers: bool = False
    flags: frozenset[str] = frozenset()  # command switches (--if-empty, --offline, -e, ...)
    priority: str = "0"  # set_policy / set_operator_policy
    apply_to: str = "all"
    user: str | None = None  # list_user_limits --user
    unit: str = "gb"  # memory_breakdown --unit


class Output:
    def __init__(self, options: Options) -> None:
        self.options = options

    def banner(self, text: str) -> None:
        if not (self.options.quiet or self.options.silent or self.options.formatter in ("json", "csv")):
            print(text)

    def result(self, text: str, as_json: Any) -> None:
        if self.options.silent:
            return
        print(json.dumps(as_json, separators=(",", ":")) if self.options.formatter == "json" else text)

    def error(self, text: str) -> None:
        if not self.options.silent:
            print(text, file=sys.stderr)


_VALUE_FLAGS = {
    "-n": "node",
    "--node": "node",
    "-t": "timeout",
    "--timeout": "timeout",
    "--formatter": "formatter",
    "-p": "vhost",
    "--vhost": "vhost",
    "--priority": "priority",
    "--apply-to": "apply_to",
    "--user": "user",
    "--unit": "unit",
}
# Switches of rabbitmqctl's and rabbitmq-plugins' commands, kept for the command to read.
_SWITCHES = frozenset(
    {
        "--if-empty",
        "--if-unused",
        "--offline",
        "--online",
        "--local",
        "-e",
        "-E",
        "--enabled",
        "--implicitly-enabled",
        "-v",
        "--verbose",
        "-m",
        "--minimal",
        "--all",
        "--limit",
        "--global",
    }
)


def parse(argv: Sequence[str]) -> Options:
    """RabbitMQ's CLI syntax: global options before or after the command, ``--opt=value`` too."""
    options, rest, items = Options(), [], list(argv)
    while items:
        item = items.pop(0)
        name, eq, inline = item.partition("=")
        if name in _VALUE_FLAGS:
            if not eq and not items:
                raise ValueError(f"option {name} needs a value")
            value = inline if eq else items.pop(0)
            if _VALUE_FLAGS[name] == "timeout":
                options.timeout_s = float(value)
            else:
                setattr(options, _VALUE_FLAGS[name], value)
        elif item in ("-q", "--quiet"):
            options.quiet = True
        elif item in ("-s", "--silent"):
            options.silent = True
        elif item == "--no-table-headers":
            options.no_table_headers = True
        elif item in _SWITCHES:
            options.flags = options.flags | {item}
        elif item in ("-l", "--longnames"):
            pass  # node names resolve the same either way here
        elif item.startswith("-") and item != "-":
            raise ValueError(f"invalid option {item}")
        else:
            rest.append(item)
    if not rest:
        raise ValueError("no command given")
    options.command, options.args = rest[0], tuple(rest[1:])
    if options.formatter not in ("string", "json", "table", "csv"):
        raise ValueError(f"formatter {options.formatter!r} is not supported (table, json, csv)")
    return options


def _timeout(options: Options) -> float:
    return (
        options.timeout_s if options.timeout_s is not None else DEFAULT_TIMEOUT_S.get(options.command, 60.0)
    )


def _properties(target: Target, out: Output, timeout_s: float) -> dict[str, Any] | None:
    try:
        return server_properties(target.host, target.amqp_port, timeout_s)
    except (OSError, ProbeFailed) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        out.error(
            UNREACHABLE.format(node=target.node, host=target.host, port=target.amqp_port, reason=reason)
        )
        return None


def _describe(listener: dict[str, Any]) -> str:
    return (
        f"Interface: {listener['interface']}, port: {listener['port']}, protocol: {listener['protocol']}, "
        f"purpose: {listener['purpose']}"
    )


def ping(target: Target, options: Options, out: Output) -> int:
    ms = int(_timeout(options) * 1000)
    out.banner(
        f"Will ping {target.node}. This only checks if the OS process is running and registered with epmd. "
        f"Timeout: {ms} ms."
    )
    try:
        server_properties(target.host, target.amqp_port, _timeout(options))
    except (OSError, ProbeFailed):
        out.error(f"Error:\nFailed to connect and authenticate to {target.node} in {ms} ms")
        return EX_UNAVAILABLE
    out.result("Ping succeeded", {"message": "Ping succeeded"})
    return EX_OK


def check_running(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Checking if RabbitMQ is running on node {target.node} ...")
    if _properties(target, out, _timeout(options)) is None:
        return EX_UNAVAILABLE
    text = f"RabbitMQ on node {target.node} is fully booted and running"
    out.result(text, {"message": text})
    return EX_OK


def check_local_alarms(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Asking node {target.node} to report any local resource alarms ...")
    try:
        alarms = local_alarms(
            target.host, target.amqp_port, target.user, target.password, target.vhost, _timeout(options)
        )
    except (OSError, ProbeFailed) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        out.error(
            UNREACHABLE.format(node=target.node, host=target.host, port=target.amqp_port, reason=reason)
        )
        return EX_UNAVAILABLE
    if not alarms:
        out.result(f"Node {target.node} reported no local alarms", {"result": "ok"})
        return EX_OK
    text = f"Node {target.node} reported local alarms:\n" + "\n".join(alarms)
    out.result(text, {"result": "error", "node": target.node, "alarms": alarms, "message": text})
    return EX_UNAVAILABLE


def check_port_connectivity(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Testing TCP connections to all active listeners on node {target.node} ...")
    if _properties(target, out, _timeout(options)) is None:
        return EX_UNAVAILABLE
    listeners = target.listeners()
    failed = [item for item in listeners if not port_open(target.host, item["port"], _timeout(options))]
    if failed:
        lines = [" " + _describe(item) for item in failed]
        text = f"Connection to ports of the following listeners on node {target.node} failed: \n" + "\n".join(
            lines
        )
        out.result(text, {"result": "error", "node": target.node, "listeners": failed, "message": text})
        return EX_UNAVAILABLE
    ports = ", ".join(str(item["port"]) for item in listeners)
    out.result(
        f"Successfully connected to ports {ports} on node {target.node}.",
        {"listeners": listeners, "node": target.node, "result": "ok"},
    )
    return EX_OK


def await_startup(target: Target, options: Options, out: Output) -> int:
    """Wait until the broker answers on its AMQP port (it opens it last, once recovery and definitions are
    done), polling as rabbitmqctl await_startup does; silent on success, like RabbitMQ's."""
    deadline = time.monotonic() + _timeout(options)
    while True:
        try:
            server_properties(target.host, target.amqp_port, max(0.1, min(2.0, deadline - time.monotonic())))
            return EX_OK
        except (OSError, ProbeFailed) as error:
            if time.monotonic() >= deadline:
                reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
                out.error(
                    UNREACHABLE.format(
                        node=target.node, host=target.host, port=target.amqp_port, reason=reason
                    )
                )
                return EX_UNAVAILABLE
            time.sleep(0.2)


def _ha_fields(target: Target, timeout_s: float) -> dict[str, Any]:
    """The node's role in a high-availability pair (broker/ha), from /api/nodes over the CLI channel, which a
    standby opens too; {} when HA is off or the channel cannot be reached."""
    try:
        node = Api(target, timeout_s).call("GET", "/api/nodes")[0]
    except (Unavailable, ApiFailure, OSError, LookupError, TypeError):
        return {}
    return {key: value for key, value in node.items() if key.startswith("ha_")}


def status(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Status of node {target.node} ...")
    ha = _ha_fields(target, _timeout(options))
    # A standby opens no AMQP listener: what the handshake would report is unknown, the rest is not.
    props = {} if ha.get("ha_role") == "standby" else _properties(target, out, _timeout(options))
    if props is None:
        return EX_UNAVAILABLE
    loaded = target.loaded
    listeners = [item for item in target.listeners() if port_open(target.host, item["port"], 2.0)]
    watermark = loaded.value("vm_memory_high_watermark")
    plugins = started_plugins(loaded.enabled_plugins)
    report = {
        "rabbitmq_version": props.get("version"),
        "product_name": props.get("product"),
        "product_version": props.get("version"),
        "warrenmq_version": props.get("warrenmq_version"),
        "erlang_version": props.get("platform"),
        "node_name": target.node,
        "os": platform.system(),
        "is_under_maintenance": False,
        "listeners": listeners,
        "alarms": [],
        "active_plugins": plugins,
        "enabled_plugin_file": loaded.plugins_file,
        "config_files": loaded.files,
        "data_directory": loaded.value("data_dir"),
        "vm_memory_high_watermark_setting": {watermark.kind: watermark.value},
        **ha,
    }
    sections = [
        "Runtime\n",
        f"OS: {report['os']}",
        "Is under maintenance?: false",
        f"RabbitMQ version: {report['rabbitmq_version']}",
        f"RabbitMQ product: {report['product_name']} {report['product_version']}",
        f"WarrenMQ version: {report['warrenmq_version']}",
        f"Node name: {target.node}",
        f"Runtime: {report['erlang_version']}",
        "\nPlugins\n",
        f"Enabled plugin file: {loaded.plugins_file}",
        "Enabled plugins:\n",
        *(f" * {name}" for name in plugins),
        "\nData directory\n",
        f"Node data directory: {report['data_directory']}",
        "\nConfig files\n",
        *(f" * {path}" for path in loaded.files),
        "\nAlarms\n",
        "(none)",
        "\nListeners\n",
        *(_describe(item) for item in listeners),
    ]
    if ha:
        sections += [
            "\nHigh availability\n",
            f"Role: {ha.get('ha_role')}",
            f"Epoch: {ha.get('ha_epoch')}",
            f"Lease: {ha.get('ha_lease_s')} s",
        ]
    out.result("\n".join(sections), report)
    return EX_OK


# memory_breakdown --unit: RabbitMQ's units (decimal kb/mb/gb, binary kib/mib/gib).
_UNITS = {"bytes": 1, "kb": 10**3, "kib": 2**10, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}


def memory_breakdown(target: Target, options: Options, out: Output) -> int:
    """The node's memory by category, largest first, in ``--unit`` (gb by default), with the share of the
    resident set, as rabbitmq-diagnostics memory_breakdown prints it; the figures are the management API's
    (GET /api/nodes/{node}/memory)."""
    unit = options.unit.lower()
    if unit not in _UNITS:
        out.error(f"Error: unknown unit {options.unit!r} (one of {', '.join(_UNITS)})")
        return EX_USAGE
    out.banner(f"Reporting memory breakdown on node {target.node}...")
    try:
        api = Api(target, _timeout(options))
        node = api.call("GET", "/api/nodes")[0]["name"]
        memory = api.call("GET", f"/api/nodes/{quote(node)}/memory")["memory"]
    except (Unavailable, ApiFailure, OSError) as error:
        out.error(
            UNREACHABLE.format(node=target.node, host=target.dist_host, port=target.dist_port, reason=error)
        )
        return EX_UNAVAILABLE
    rss = max(1, int(memory["total"]["rss"]))
    sizes = [(key, int(value)) for key, value in memory.items() if isinstance(value, int)]
    rows = [(key, size, round(100.0 * size / rss, 2)) for key, size in sorted(sizes, key=lambda kv: -kv[1])]
    divisor = _UNITS[unit]
    text = "\n".join(
        f"{key}: {size if divisor == 1 else round(size / divisor, 4)} {unit} ({share}%)"
        for key, size, share in rows
    )
    out.result(text, {key: {"bytes": size, "percentage": share} for key, size, share in rows})
    return EX_OK


COMMANDS: dict[str, Callable[[Target, Options, Output], int]] = {
    "ping": ping,
    "check_running": check_running,
    "check_local_alarms": check_local_alarms,
    "check_port_connectivity": check_port_connectivity,
    "await_startup": await_startup,
    "status": status,
    "memory_breakdown": memory_breakdown,
}


def run(tool: str, argv: Sequence[str], commands: Sequence[str]) -> int:
    try:
        options = parse(argv)
    except ValueError as error:
        print(
            f"{tool}: {error}\nUsage: {tool} [-n <node>] [-t <timeout>] [-q] [--formatter json] <command>\n"
            f"Commands: {', '.join(commands)}",
            file=sys.stderr,
        )
        return EX_USAGE
    if options.command not in commands:
        print(
            f"\nCommand '{options.command}' not found. \n\n"
            f"Commands WarrenMQ's {tool} has: {', '.join(commands)}",
            file=sys.stderr,
        )
        return EX_USAGE
    try:
        target = find_target(options.node)
    except SystemExit as error:  # an unreadable configuration, as the server would report it
        print(str(error.code), file=sys.stderr)
        return EX_USAGE
    return COMMANDS[options.command](target, options, Output(options))


def main(argv: Sequence[str] | None = None) -> int:
    return run("rabbitmq-diagnostics", sys.argv[1:] if argv is None else argv, list(COMMANDS))
