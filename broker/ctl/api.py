"""How rabbitmqctl reaches the running broker: its management HTTP API on the loopback address, logged in
with the node-local cookie (broker/config/cookie.py) as RabbitMQ's CLIs log in with the Erlang cookie, so no
user's password is needed. With the management listener off the CLIs report the node unreachable (69)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from broker.config.cookie import HEADER, read_cookie
from broker.ctl.target import Target


class Unavailable(Exception):
    """The broker's API cannot be reached (exit 69 with the unreachable text)."""


class ApiFailure(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


class Api:
    def __init__(self, target: Target, timeout_s: float) -> None:
        if target.management_port is None:
            raise Unavailable("the management listener is off (management.tcp.port / enabled_plugins)")
        self.base = f"http://{_host(target.host)}:{target.management_port}"
        self.timeout_s = timeout_s
        self.cookie = read_cookie()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: tuple[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        elif self.cookie:
            request.add_header(HEADER, self.cookie)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                reason = str(json.loads(text).get("reason", text))
            except (ValueError, AttributeError):
                reason = text
            if error.code == 401 and auth is None:
                raise Unavailable(
                    "the CLI cookie was refused: $HOME/.erlang.cookie is missing or not the broker's"
                ) from None
            raise ApiFailure(error.code, reason) from None
        except (urllib.error.URLError, OSError) as error:
            cause: object = error.reason if isinstance(error, urllib.error.URLError) else error
            text = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
            raise Unavailable(text) from None
        return json.loads(raw) if raw.strip() else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
