"""What `rabbitmq-diagnostics status`, `listeners` and `check_port_connectivity` report of a node, asked of
the node over its CLI channel (GET /api/warrenmq/cli/node, broker/management/control.py) as RabbitMQ's CLIs
ask theirs (rabbit_networking:active_listeners): the listeners it bound, its pid, paths and plugins, never
the CLI's own environment. Texts, JSON and exit codes as RabbitMQ 3.10's."""

from __future__ import annotations

import platform
from typing import Any

from broker.ctl.api import Api, ApiFailure, Unavailable
from broker.ctl.options import EX_OK, EX_UNAVAILABLE, UNREACHABLE, Options, Output, timeout_s
from broker.ctl.probe import ProbeFailed, port_open, server_properties
from broker.ctl.target import Target


def amqp_properties(target: Target, out: Output, timeout: float) -> dict[str, Any] | None:
    """The broker's connection.start properties (it is up), or None once the error is reported."""
    try:
        return server_properties(target.host, target.amqp_port, timeout)
    except (OSError, ProbeFailed) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        out.error(
            UNREACHABLE.format(node=target.node, host=target.host, port=target.amqp_port, reason=reason)
        )
        return None


def _unreachable(target: Target, out: Output, error: Exception) -> int:
    out.error(
        UNREACHABLE.format(node=target.node, host=target.dist_host, port=target.dist_port, reason=error)
    )
    return EX_UNAVAILABLE


def node_facts(api: Api) -> dict[str, Any]:
    facts: dict[str, Any] = api.get("/api/warrenmq/cli/node")
    return facts


def describe(listener: dict[str, Any]) -> str:
    return (
        f"Interface: {listener['interface']}, port: {listener['port']}, protocol: {listener['protocol']}, "
        f"purpose: {listener['purpose']}"
    )


def listeners(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Asking node {target.node} to report its protocol listeners ...")
    try:
        found = node_facts(Api(target, timeout_s(options)))["listeners"]
    except (Unavailable, ApiFailure) as error:
        return _unreachable(target, out, error)
    out.result(
        "\n".join(describe(item) for item in found), {"listeners": found, "node": target.node, "result": "ok"}
    )
    return EX_OK


def _probe_host(target: Target, listener: dict[str, Any]) -> str:
    return target.dist_host if listener["protocol"] == "clustering" else target.host


def check_port_connectivity(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Testing TCP connections to all active listeners on node {target.node} ...")
    timeout = timeout_s(options)
    try:
        found = node_facts(Api(target, timeout))["listeners"]
    except (Unavailable, ApiFailure) as error:
        return _unreachable(target, out, error)
    failed = [item for item in found if not port_open(_probe_host(target, item), item["port"], timeout)]
    if failed:
        lines = [" " + describe(item) for item in failed]
        text = f"Connection to ports of the following listeners on node {target.node} failed: \n" + "\n".join(
            lines
        )
        out.result(text, {"result": "error", "node": target.node, "failures": failed, "message": text})
        return EX_UNAVAILABLE
    # RabbitMQ's text lists the ports in ascending order, its JSON the listeners in the node's order.
    ports = ", ".join(str(port) for port in sorted(item["port"] for item in found))
    out.result(
        f"Successfully connected to ports {ports} on node {target.node}.",
        {"listeners": found, "node": target.node, "result": "ok"},
    )
    return EX_OK


def _ha_fields(api: Api) -> dict[str, Any]:
    """The node's role in a high-availability pair (broker/ha), from /api/nodes; {} when HA is off."""
    try:
        node = api.get("/api/nodes")[0]
    except (Unavailable, ApiFailure, LookupError, TypeError):
        return {}
    return {key: value for key, value in node.items() if key.startswith("ha_")}


def status(target: Target, options: Options, out: Output) -> int:
    out.banner(f"Status of node {target.node} ...")
    timeout = timeout_s(options)
    try:
        api = Api(target, timeout)
        facts = node_facts(api)
    except (Unavailable, ApiFailure) as error:
        return _unreachable(target, out, error)
    ha = _ha_fields(api)
    # A standby opens no AMQP listener: what the handshake would report is unknown, the rest is not.
    props = {} if ha.get("ha_role") == "standby" else amqp_properties(target, out, timeout)
    if props is None:
        return EX_UNAVAILABLE
    plugins = list(facts["running_plugins"])
    report = {
        "pid": facts["pid"],
        "rabbitmq_version": props.get("version"),
        "product_name": props.get("product"),
        "product_version": props.get("version"),
        "warrenmq_version": props.get("warrenmq_version"),
        "erlang_version": props.get("platform"),
        "node_name": facts["node"],
        "os": platform.system(),
        "is_under_maintenance": False,
        "listeners": facts["listeners"],
        "alarms": [],
        "active_plugins": plugins,
        "enabled_plugin_file": facts["enabled_plugin_file"],
        "config_files": facts["config_files"],
        "data_directory": facts["data_directory"],
        "log_files": [facts["log_file"] or "<stdout>"],
        "vm_memory_high_watermark_setting": facts["vm_memory_high_watermark_setting"],
        **ha,
    }
    sections = [
        "Runtime\n",
        f"OS PID: {report['pid']}",
        f"OS: {report['os']}",
        "Is under maintenance?: false",
        f"RabbitMQ version: {report['rabbitmq_version']}",
        f"RabbitMQ product: {report['product_name']} {report['product_version']}",
        f"WarrenMQ version: {report['warrenmq_version']}",
        f"Node name: {report['node_name']}",
        f"Runtime: {report['erlang_version']}",
        "\nPlugins\n",
        f"Enabled plugin file: {report['enabled_plugin_file']}",
        "Enabled plugins:\n",
        *(f" * {name}" for name in plugins),
        "\nData directory\n",
        f"Node data directory: {report['data_directory'] or '(none: the node keeps nothing on disk)'}",
        "\nConfig files\n",
        *(f" * {path}" for path in report["config_files"]),
        "\nLog file(s)\n",
        *(f" * {path}" for path in report["log_files"]),
        "\nAlarms\n",
        "(none)",
        "\nListeners\n",
        *(describe(item) for item in report["listeners"]),
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
