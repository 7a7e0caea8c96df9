"""`rabbitmqctl`: the commands scripts and healthchecks use, with RabbitMQ 3.10's banners, output formats,
error texts and exit codes (64 usage, 65 data error, 67 no such user, 69 unavailable, 70 software), talking
to the running node over its CLI channel with the Erlang cookie (broker/ctl/api.py).
Compared with RabbitMQ's own rabbitmqctl in tests/integration/test_rabbitmqctl.py."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from broker.ctl import admin, limits, policies
from broker.ctl.api import Api, ApiFailure, Unavailable
from broker.ctl.diagnostics import COMMANDS as DIAGNOSTICS
from broker.ctl.lists import LISTINGS, fetch_rows, unsupported
from broker.ctl.options import UNREACHABLE, Options, Output, parse
from broker.ctl.tables import render
from broker.ctl.target import Target, find_target

EX_USAGE, EX_UNAVAILABLE = 64, 69


def stop(api: Api, options: Options, out: Output) -> int:
    """`rabbitmqctl stop`: the node shuts down as on SIGTERM; the command returns once the node has dropped
    the CLI channel, as RabbitMQ's returns once the node has halted its applications."""
    out.banner(f"Stopping and halting node {api.target.node} ...")
    api.call("POST", "/api/warrenmq/cli/stop")
    api.wait_closed()
    return 0


ADMIN: dict[str, tuple[int, Callable[[Api, Options, Output], int]]] = {
    "stop": (0, stop),
    **admin.COMMANDS,
    **policies.COMMANDS,
    **limits.COMMANDS,
}
COMMANDS = ("await_startup", "ping", "status", *sorted(LISTINGS), *sorted(ADMIN))


def _usage(tool: str, command: str, text: str) -> int:
    print(f"{text}\nArguments given:\n\t{command}\n\nUsage\n\n{tool} {command}", file=sys.stderr)
    return EX_USAGE


def list_command(api: Api, options: Options, out: Output) -> int:
    listing = LISTINGS[options.command]
    columns = options.args or listing.default
    missing = unsupported(listing, columns)
    if missing:
        return _usage(
            "rabbitmqctl",
            " ".join((options.command, *options.args)),
            f"Error (argument validation): Info key(s) {','.join(missing)} are not supported",
        )
    timeout = f"{options.timeout_s if options.timeout_s is not None else 60.0:.1f}"
    out.banner(listing.banner.format(vhost=options.vhost, timeout=timeout))
    rows = fetch_rows(api, listing, options.vhost)
    text = render(
        rows,
        columns,
        "table" if options.formatter == "string" else options.formatter,
        headers=not (options.silent or options.no_table_headers),
        json_columns=listing.json_columns,
    )
    if text:
        print(text)
    return 0


def _run(target: Target, options: Options) -> int:
    out = Output(options)
    timeout_s = options.timeout_s if options.timeout_s is not None else 60.0
    try:
        api = Api(target, timeout_s)
        if options.command in LISTINGS:
            return list_command(api, options, out)
        arity, command = ADMIN[options.command]
        if arity >= 0 and len(options.args) < arity:
            return _usage(
                "rabbitmqctl",
                " ".join((options.command, *options.args)),
                "Error (argument validation): not enough arguments.",
            )
        return command(api, options, out)
    except Unavailable as error:
        out.error(
            UNREACHABLE.format(node=target.node, host=target.dist_host, port=target.dist_port, reason=error)
        )
        return EX_UNAVAILABLE
    except ApiFailure as error:
        out.error(f"Error:\n{error.reason}")
        return 70


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse(args)
    except ValueError as error:
        print(f"rabbitmqctl: {error}", file=sys.stderr)
        return EX_USAGE
    if options.command in DIAGNOSTICS and options.command in COMMANDS:
        from broker.ctl.diagnostics import run

        return run("rabbitmqctl", args, COMMANDS)
    if options.command not in COMMANDS:
        print(
            f"\nCommand '{options.command}' not found. \n\nCommands WarrenMQ's rabbitmqctl has: "
            + ", ".join(COMMANDS),
            file=sys.stderr,
        )
        return EX_USAGE
    try:
        target = find_target(options.node)
    except SystemExit as error:
        print(str(error.code), file=sys.stderr)
        return EX_USAGE
    return _run(target, options)
