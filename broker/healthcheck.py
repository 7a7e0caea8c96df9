"""`warrenmq healthcheck`: one real AMQP 0-9-1 handshake (start, tune, open) and a clean close; exit 0 when
the broker opened the connection, 1 otherwise. The Docker HEALTHCHECK runs it.
"""

from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import unquote, urlparse

from broker.ctl.probe import ProbeFailed, open_connection

# One failure type with rabbitmq-diagnostics' probe, whose handshake this shares.
HealthcheckFailed = ProbeFailed


def default_url() -> str:
    port = os.environ.get("WARRENMQ_PORT", "5672")
    return f"amqp://guest:guest@127.0.0.1:{port}/"


def check(url: str, timeout_s: float = 5.0) -> None:
    """Raise HealthcheckFailed (or OSError) unless a full handshake on ``url`` succeeds."""
    parsed = urlparse(url)
    if parsed.scheme != "amqp":
        raise HealthcheckFailed(f"not an amqp:// URL: {url}")
    vhost = unquote(parsed.path[1:]) if parsed.path not in ("", "/") else "/"
    user, password = unquote(parsed.username or "guest"), unquote(parsed.password or "guest")
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 5672
    capabilities: dict[str, Any] = {"authentication_failure_close": True}
    conn = open_connection(host, port, user, password, vhost, "warrenmq-healthcheck", capabilities, timeout_s)
    try:
        conn.close_cleanly("healthcheck")
    finally:
        conn.close()


def main(url: str | None, timeout_s: float) -> int:
    target = url or default_url()
    try:
        check(target, timeout_s)
    except (HealthcheckFailed, OSError) as error:
        print(f"warrenmq healthcheck: {target}: {error}", file=sys.stderr)
        return 1
    return 0
