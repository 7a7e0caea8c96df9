"""structlog set-up: the log's destinations (the console, the log file, or both, as rabbitmq.conf's
``log.console`` / ``log.file`` and RABBITMQ_LOGS / RABBITMQ_LOG_BASE name them) and its two formats.

Plain text is RabbitMQ's own line: ``2026-01-02 03:04:05.678901+00:00 [info] <pid> message``, every line of
a multi-line message under the same prefix (rabbit_logger_text_fmt), so what an operator greps for in a
RabbitMQ log is found in WarrenMQ's. JSON is one object a line with ``event`` (the message), ``level``,
``timestamp`` and the event's fields.

An event carrying ``domain`` (RabbitMQ's log domain: ``rabbitmq.connection``, ``rabbitmq.channel``,
``rabbitmq``) is one of RabbitMQ's lines: its plain form is exactly RabbitMQ's text, its fields go to JSON
only. WarrenMQ's own events (no ``domain``) show their fields as ``key=value`` after the message.

The console is stderr: stdout carries the readiness line and "Server startup complete" (broker/node.py).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import structlog

PLAIN = "console"
JSON = "json"
# The pid shown on lines that belong to no connection or channel (the node's own), as on the start-up
# lines (broker.config.plugins.startup_complete_lines).
NODE_PID = "<0.9.0>"
_LEVELS = logging.getLevelNamesMapping()
# Keys every event has or that the plain prefix shows: never repeated as key=value.
_PREFIX_KEYS = frozenset({"event", "level", "timestamp", "pid", "domain", "exception"})


class Destination(NamedTuple):
    stream: TextIO
    log_format: str  # PLAIN or JSON
    level: int  # logging's number: events below it are not written here


def plain_line(event_dict: MutableMapping[str, Any]) -> str:
    """RabbitMQ's plain-text line(s) for one event."""
    stamp = str(event_dict.get("timestamp", "")).replace("T", " ").replace("Z", "+00:00")
    prefix = f"{stamp} [{event_dict.get('level', 'info')}] {event_dict.get('pid', NODE_PID)} "
    message = str(event_dict.get("event", ""))
    if "domain" not in event_dict:
        fields = [f"{key}={value}" for key, value in event_dict.items() if key not in _PREFIX_KEYS]
        if fields:
            message = f"{message} {' '.join(fields)}"
    if "exception" in event_dict:
        message = f"{message}\n{event_dict['exception']}".rstrip("\n")
    return "\n".join(prefix + line for line in message.split("\n"))


def json_line(event_dict: MutableMapping[str, Any]) -> str:
    return json.dumps(event_dict, default=repr)


class _Fanout:
    """The last processor: renders the event once per format and writes it to each destination whose level
    it reaches. Log calls come from the event loop and from the store's and the journal's threads."""

    def __init__(self, destinations: Sequence[Destination]) -> None:
        self.destinations = tuple(destinations)
        self.lock = threading.Lock()

    def __call__(self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
        level = _LEVELS.get(str(event_dict.get("level", "info")).upper(), logging.INFO)
        rendered: dict[str, str] = {}
        with self.lock:
            for destination in self.destinations:
                if level < destination.level:
                    continue
                text = rendered.get(destination.log_format)
                if text is None:
                    text = json_line(event_dict) if destination.log_format == JSON else plain_line(event_dict)
                    rendered[destination.log_format] = text
                destination.stream.write(text + "\n")
                destination.stream.flush()
        raise structlog.DropEvent


def open_log_file(path: str) -> TextIO:
    """Append to ``path`` (RABBITMQ_LOGS), creating its directory as RabbitMQ creates RABBITMQ_LOG_BASE."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # The process's log: open until it exits.
    return open(path, "a", buffering=1)


def destinations(
    log_format: str,
    level: str,
    path: str | None,
    console: bool | None = None,
    file_format: str | None = None,
) -> list[Destination]:
    """Where the log goes. ``console``: rabbitmq.conf's ``log.console`` (None: not set, so the console only
    when there is no log file, RabbitMQ's default). With neither a file nor the console, the console: a
    node never logs nowhere."""
    number = _LEVELS[level.upper()]
    out: list[Destination] = []
    if path is not None:
        out.append(Destination(open_log_file(path), file_format or log_format, number))
    if console or (console is None and path is None) or not out:
        out.append(Destination(sys.stderr, log_format, number))
    return out


def configure_logging(
    log_format: str = PLAIN,
    level: str = "info",
    path: str | None = None,
    console: bool | None = None,
    file_format: str | None = None,
) -> None:
    """Log to the file ``path`` (RABBITMQ_LOGS) and/or the console (stderr), as ``destinations`` decides."""
    targets = destinations(log_format, level, path, console, file_format)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _Fanout(targets),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(min(target.level for target in targets)),
        logger_factory=structlog.ReturnLoggerFactory(),
        cache_logger_on_first_use=True,
    )
