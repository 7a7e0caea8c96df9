"""`rabbitmq-diagnostics` (and the same commands under `rabbitmqctl`): ping, check_running,
check_port_connectivity, check_local_alarms, status and await_startup, with RabbitMQ's texts, its
``--formatter json`` objects and its exit codes (0 ok, 64 usage, 69 node unavailable or check failed),
compared with RabbitMQ 3.10's CLI in tests/integration/test_diagnostics.py.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

from broker.ctl.api import Api, ApiFailure, Unavailable, quote
from broker.ctl.node_report import amqp_properties, check_port_connectivity, listeners, status
from broker.ctl.options import (
    EX_OK,
    EX_UNAVAILABLE,
    EX_USAGE,
    UNREACHABLE,
    Options,
    Output,
    parse,
    timeout_s,
)
from broker.ctl.probe import ProbeFailed, local_alarms, server_properties
from broker.ctl.target import Target, find_target


def ping(target: Target, options: Options, out: Output) -> int:
    ms = int(timeout_s(options) * 1000)
    out.banner(
        f"Will ping {target.node}. This only checks if the OS process is running and registered with epmd. "
        f"Timeout: {ms} ms."
    )
    try:
        server_properties(target.host, target.amqp_port, timeout_s(options))
    except (OSError, ProbeFailed):
        out.error(f"Error:\nFailed to connect and authenticate to {target.node} in {ms} ms")
        return EX_UNAVAILABLE
    out.result("Ping succeeded", {"message": "Ping succeeded"})
    return EX_OK


def check_running(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Checking if RabbitMQ is running on node {target.node} ...")
    if amqp_properties(target, out, timeout_s(options)) is None:
        return EX_UNAVAILABLE
    text = f"RabbitMQ on node {target.node} is fully booted and running"
    out.result(text, {"message": text})
    return EX_OK


def check_local_alarms(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Asking node {target.node} to report any local resource alarms ...")
    try:
        alarms = local_alarms(
            target.host, target.amqp_port, target.user, target.password, target.vhost, timeout_s(options)
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


def await_startup(target: Target, options: Options, out: Output) -> int:
    """Wait until the broker answers on its AMQP port (it opens it last, once recovery and definitions are
    done), polling as rabbitmqctl await_startup does; silent on success, like RabbitMQ's. The node is looked
    up again at each poll: its registry entry, with the ports it got, appears once it has started."""
    deadline = time.monotonic() + timeout_s(options)
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
            target = find_target(options.node)


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
        api = Api(target, timeout_s(options))
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
    "listeners": listeners,
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
