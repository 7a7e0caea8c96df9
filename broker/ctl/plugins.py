"""`rabbitmq-plugins` list/enable/disable: rewrites the enabled_plugins file the server reads (the same path,
found from the same environment) as RabbitMQ's does, then, unless ``--offline``, applies the new set to the
running broker: the exchange-type plugins start and stop at once; rabbitmq_management and
rabbitmq_prometheus (their listeners) change at the next start, which the output says."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from broker.config.plugins import (
    CATALOGUE,
    explicit_plugins,
    format_enabled_plugins,
    implicit_plugins,
)
from broker.core.model.profile import PROFILES
from broker.ctl.api import Api, ApiFailure, Unavailable
from broker.ctl.options import UNREACHABLE, Options, Output, parse
from broker.ctl.target import Target, find_target

EX_USAGE, EX_UNAVAILABLE, EX_SOFTWARE = 64, 69, 70


def _running(target: Target) -> tuple[list[str], bool]:
    """The plugins running on the broker, and whether it answered."""
    try:
        found = Api(target, 10.0).get("/api/warrenmq/plugins")
    except (Unavailable, ApiFailure):
        return [], False
    return list(found["running"]), True


def _profile_version(target: Target) -> str:
    return PROFILES[target.loaded.value("profile")].rabbitmq_version


def list_plugins(target: Target, options: Options, out: Output) -> int:
    explicit = explicit_plugins(target.loaded.enabled_plugins)
    implicit = implicit_plugins(explicit)
    running, _ = _running(target)
    version = _profile_version(target)
    rows = []
    for name in CATALOGUE:
        state = "enabled" if name in explicit else "implicit" if name in implicit else "not_enabled"
        if ("-e" in options.flags or "--enabled" in options.flags) and state == "not_enabled":
            continue
        if ("-E" in options.flags or "--explicit" in options.flags) and state != "enabled":
            continue
        pattern = options.args[0] if options.args else ".*"
        if not re.search(pattern, name):
            continue
        rows.append((name, state, name in running))
    if options.formatter == "json":
        charlist = [ord(c) for c in version]
        plugins = [
            {
                "enabled": state,
                "name": name,
                "running": on,
                "running_version": charlist if on else None,
                "version": charlist,
            }
            for name, state, on in rows
        ]
        print(
            json.dumps({"format": "normal", "plugins": plugins, "status": "running"}, separators=(",", ":"))
        )
        return 0
    out.banner(f'Listing plugins with pattern "{options.args[0] if options.args else ".*"}" ...')
    if not (options.quiet or options.silent):
        print(" Configured: E = explicitly enabled; e = implicitly enabled")
        print(f" | Status: * = running on {target.node}")
        print(" |/")
    width = max((len(name) for name, _, _ in rows), default=0)
    for name, state, on in rows:
        mark = {"enabled": "E", "implicit": "e"}.get(state, " ") + ("*" if on else " ")
        print(f"[{mark}] {name.ljust(width)} {version}")
    return 0


def change(target: Target, options: Options, out: Output, enable: bool) -> int:
    names = list(options.args)
    if not names:
        print("Error (argument validation): not enough arguments.", file=sys.stderr)
        return EX_USAGE
    verb = "Enabling" if enable else "Disabling"
    out.banner(f"{verb} plugins on node {target.node}:\n" + "\n".join(names))
    unknown = [name for name in names if name not in CATALOGUE]
    if unknown:
        out.error("Error:\n{:plugins_not_found, [" + ", ".join(f":{n}" for n in unknown) + "]}")
        return EX_SOFTWARE
    before = list(explicit_plugins(target.loaded.enabled_plugins))
    after = (
        [*before, *(n for n in names if n not in before)] if enable else [n for n in before if n not in names]
    )
    configured = sorted({*after, *implicit_plugins(tuple(after))})
    offline = "--offline" in options.flags
    if not offline and _running(target)[1] is False:
        out.error(
            UNREACHABLE.format(
                node=target.node, host=target.dist_host, port=target.dist_port, reason="unreachable"
            )
        )
        return EX_UNAVAILABLE
    # RabbitMQ writes the explicit set sorted (lists:usort), whatever the order of the file before.
    Path(target.loaded.plugins_file).write_text(format_enabled_plugins(sorted(after)))
    lines = ["The following plugins have been configured:", *(f"  {n}" for n in configured)]
    lines.append(f"Applying plugin configuration to {target.node}...")
    changed = [n for n in names if (n in before) != enable]
    if not changed:
        lines.append("Plugin configuration unchanged.")
    else:
        lines += [
            f"The following plugins have been {'enabled' if enable else 'disabled'}:",
            *(f"  {n}" for n in changed),
            "",
        ]
        if offline:
            lines += [
                f"set {len(configured)} plugins.",
                "Offline change; changes will take effect at broker restart.",
            ]
        else:
            applied: dict[str, Any] = Api(target, 10.0).call(
                "PUT", "/api/warrenmq/plugins", {"enabled": after}
            )
            switched = applied["started"] if enable else applied["stopped"]
            lines.append(f"{'started' if enable else 'stopped'} {len(switched)} plugins.")
            rest = [n for n in changed if n not in switched]
            if rest:
                lines.append(f"WarrenMQ: {', '.join(rest)} will change at the next broker start.")
    if not (options.quiet or options.silent):
        print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except ValueError as error:
        print(f"rabbitmq-plugins: {error}", file=sys.stderr)
        return EX_USAGE
    if options.command not in ("list", "enable", "disable"):
        print(
            f"\nCommand '{options.command}' not found. \n\n"
            "Commands WarrenMQ's rabbitmq-plugins has: list, enable, disable",
            file=sys.stderr,
        )
        return EX_USAGE
    try:
        target = find_target(options.node)
    except SystemExit as error:
        print(str(error.code), file=sys.stderr)
        return EX_USAGE
    out = Output(options)
    if options.command == "list":
        return list_plugins(target, options, out)
    return change(target, options, out, options.command == "enable")
