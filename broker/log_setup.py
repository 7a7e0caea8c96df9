"""structlog set-up: human console lines or JSON, on stderr (stdout carries the readiness line) or in the
log file RABBITMQ_LOGS names."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

import structlog


def configure_logging(log_format: str = "console", level: str = "info", path: str | None = None) -> None:
    """``path``: append to that file (RABBITMQ_LOGS, its directory created as RabbitMQ creates
    RABBITMQ_LOG_BASE) instead of stderr."""
    out: TextIO = sys.stderr
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        out = open(path, "a", buffering=1)  # noqa: SIM115 - the process's log, open until it exits
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
