"""The `warrenmq` command: `serve` runs the broker, `config show` explains its settings, `ctl` is rabbitmqctl,
`bench` measures one, `analytics` runs Spark jobs."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

from broker import __version__
from protocol import compiled


class HelpFormatter(argparse.HelpFormatter):
    """argparse builds a formatter for every add_argument (to check its metavar), and the stock one asks
    shutil for the terminal's width each time: importing shutil (with zlib, bz2 and lzma) cost every start
    ~3 ms at every start. Same width, found as shutil.get_terminal_size finds it."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width
        )


class ArgumentParser(argparse.ArgumentParser):
    """Formats help with `HelpFormatter`; its subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def terminal_columns() -> int:
    """$COLUMNS, else the terminal's width on standard output, else 80 (shutil.get_terminal_size)."""
    columns = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def build_parser(serving: bool = False) -> argparse.ArgumentParser:
    """``serving``: the parser for a `serve` command line. `config show` takes serve's arguments too; a serve
    command line never reaches them, so they are left out then (~2-4 ms of argparse per start)."""
    # broker.config imports the core: imported here, after main() prepared a `serve` process (below).
    from broker.config import add_serve_arguments

    parser = ArgumentParser(prog="warrenmq", description="An AMQP 0-9-1 broker that behaves like RabbitMQ.")
    parser.add_argument(
        "--version", action="version", version=f"warrenmq {__version__}, {compiled.describe()}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the broker in the foreground")
    add_serve_arguments(serve)
    # Listed here; main() hands `bench` its own parser, so that `serve` never imports the scenarios (their
    # clients, psutil, concurrent.futures) at start-up.
    bench = commands.add_parser("bench", help="measure a broker's throughput and latency", add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    analytics = commands.add_parser(
        "analytics", help="PySpark jobs over the event journal (needs the `analytics` extra)", add_help=False
    )
    analytics.add_argument("job_args", nargs=argparse.REMAINDER)
    ctl = commands.add_parser(
        "ctl", help="rabbitmqctl: the running node's queues, users, policies, ...", add_help=False
    )
    ctl.add_argument("ctl_args", nargs=argparse.REMAINDER)
    config = commands.add_parser("config", help="configuration as `serve` would resolve it")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    show = config_commands.add_parser(
        "show", help="each setting's value and its source (flag > environment > rabbitmq.conf > default)"
    )
    show.add_argument("--format", dest="output_format", choices=("table", "json"), default="table")
    if not serving:
        add_serve_arguments(show)
    health = commands.add_parser("healthcheck", help="exit 0 if a broker completes an AMQP handshake")
    health.add_argument(
        "--url", default=None, help="amqp://user:pass@host:port/vhost (default: local broker)"
    )
    health.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    return parser


def _prepare_serve_process() -> None:
    """Process-wide settings of `warrenmq serve`, made before it imports the broker, which they speed up."""
    # The broker renders plain console or JSON lines. structlog imports rich whenever it is installed
    # (here only as a dev tool's dependency), which costs ~45 ms of start-up for colours we never use:
    # keep it out of the server process so `warrenmq serve` starts equally fast everywhere.
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
    # Likewise greenlet (playwright's, in the development venv): structlog's deprecated threadlocal module,
    # which the broker never uses, imports it to pick its thread-local class (~2 ms).
    sys.modules.setdefault("greenlet", None)  # type: ignore[arg-type]
    from broker.server.runtime import GC_THRESHOLDS

    # Start-up creates a few hundred thousand objects (code, classes, the core's tables) and frees almost
    # none: with the default thresholds the collector ran ~57 times while `serve` imported the broker, ~13 ms
    # on the 2-core benchmark machine, finding nothing. Serving's thresholds apply from here on instead of
    # from tune_for_serving, which then freezes what start-up made.
    gc.set_threshold(*GC_THRESHOLDS)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        _prepare_serve_process()
    if argv[:1] == ["analytics"]:
        # Everything after `analytics` (--help included) belongs to the analytics CLI, imported only here:
        # the broker itself never loads Spark (import-linter contract).
        from broker.analytics.cli import main as analytics_main

        return analytics_main(argv[1:])
    if argv[:1] == ["ctl"]:
        # `warrenmq ctl` is rabbitmqctl (broker/ctl), its arguments its own.
        from broker.ctl.rabbitmqctl import main as rabbitmqctl

        return rabbitmqctl(argv[1:])
    if argv[:1] == ["bench"]:
        from broker.bench.runner import build_parser as build_bench_parser
        from broker.bench.runner import run as run_bench

        return run_bench(build_bench_parser().parse_args(argv[1:]))
    args = build_parser(serving=argv[:1] == ["serve"]).parse_args(argv)
    if args.command == "serve":
        import structlog

        from broker.config.args import Loaded, config_from_loaded
        from broker.config.layers import environ
        from broker.log_setup import configure_logging
        from broker.node import run

        loaded = Loaded(args, environ())
        config = config_from_loaded(loaded, args)
        configure_logging(
            config.log_format, config.log_level, config.log_file, config.log_console, config.log_file_format
        )
        log = structlog.get_logger("warrenmq.config")
        if loaded.files:
            log.info("config_files", files=loaded.files)
        for warning in loaded.warnings:
            log.warning(warning)
        return run(config)
    if args.command == "config":
        from broker.config.args import Loaded, config_from_loaded
        from broker.config.layers import environ
        from broker.config.show import render

        loaded = Loaded(args, environ())
        config_from_loaded(loaded, args)  # refuses what `serve` would refuse
        print(render(loaded, args.output_format))
        return 0
    if args.command == "healthcheck":
        from broker.healthcheck import main as healthcheck

        return healthcheck(args.url, args.timeout)
    return 2  # pragma: no cover - argparse rejects unknown commands first
