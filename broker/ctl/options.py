"""The CLIs' shared command line and output: RabbitMQ's global options (before or after the command,
``--opt=value`` too), its banners (left out by ``-q``, ``-s`` and the json/csv formatters), results and
errors, and its text for a node that cannot be reached."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    # add_vhost --description, --tags, --default-queue-type; None: not given.
    description: str | None = None
    tags: str | None = None
    default_queue_type: str | None = None


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
    "--description": "description",
    "--tags": "tags",
    "--default-queue-type": "default_queue_type",
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


def timeout_s(options: Options) -> float:
    """``-t``, else the command's default (60 s; await_startup 300 s, as RabbitMQ's)."""
    return (
        options.timeout_s if options.timeout_s is not None else DEFAULT_TIMEOUT_S.get(options.command, 60.0)
    )
