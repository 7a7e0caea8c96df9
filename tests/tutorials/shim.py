"""Run one RabbitMQ tutorial program unchanged against the broker under test.

Usage: ``python shim.py PROGRAM.py [ARGS...]`` with ``WARRENMQ_TUTORIAL_URL`` set. The tutorials connect with
``pika.ConnectionParameters(host="localhost")`` (port 5672, guest/guest, vhost "/"); the shim swaps host,
port, vhost and credentials for those of the URL and then runs the program as ``__main__``.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
from typing import Any
from urllib.parse import unquote, urlparse

import pika


def redirect_connection_parameters(url: str) -> None:
    parsed = urlparse(url)
    target: dict[str, Any] = {
        "host": parsed.hostname or "127.0.0.1",
        "port": parsed.port or 5672,
        "virtual_host": unquote(parsed.path[1:]) if len(parsed.path) > 1 else "/",
        "credentials": pika.PlainCredentials(parsed.username or "guest", parsed.password or "guest"),
    }
    original = pika.ConnectionParameters.__init__

    def patched(self: pika.ConnectionParameters, *args: Any, **kwargs: Any) -> None:
        # The tutorials only ever pass the host (by keyword, or as the first positional argument).
        kwargs.update(target)
        original(self, *args[1:], **kwargs)

    pika.ConnectionParameters.__init__ = patched


def main() -> None:
    # CTRL+C in a terminal reaches a program whose SIGINT raises KeyboardInterrupt. A suite started in the
    # background by a shell without job control (`cmd &` in a script, nohup) hands SIGINT down ignored, and
    # Python then installs no handler: the tests' CTRL+C would not stop the receivers.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    redirect_connection_parameters(os.environ["WARRENMQ_TUTORIAL_URL"])
    program = sys.argv[1]
    sys.argv = [program, *sys.argv[2:]]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
