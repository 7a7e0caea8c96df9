"""`rabbitmqctl`: the start-up commands scripts wait on (await_startup, ping, status). The user, vhost,
permission and list_* commands come with the management plane."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from broker.ctl.diagnostics import run

COMMANDS = ("await_startup", "ping", "status")


def main(argv: Sequence[str] | None = None) -> int:
    return run("rabbitmqctl", sys.argv[1:] if argv is None else argv, COMMANDS)
