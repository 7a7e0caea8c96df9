"""How the CLIs reach the running node: its CLI channel on the distribution port
(broker/management/control.py), as RabbitMQ's CLIs reach a node over Erlang distribution. The connection
proves the Erlang cookie with the handshake of broker/config/control_auth.py (the cookie never crosses the
wire), then carries HTTP/1.1 requests to the management API's routes: the commands read and change what the
HTTP API does, with no plugin enabled and no user's password. No node there, or a refused cookie:
Unavailable (exit 69)."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import urllib.parse
from typing import Any

from broker.config import control_auth as wire
from broker.config.cookie import read_cookie
from broker.ctl.target import Target


class Unavailable(Exception):
    """The node cannot be reached or refused the CLI (exit 69 with the unreachable text)."""


class ApiFailure(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def _read_frame(sock: socket.socket) -> dict[str, Any]:
    buffer = bytearray()
    while True:
        frame = wire.decode_frame(buffer)
        if frame is not None:
            return frame[0]
        chunk = sock.recv(4096)
        if not chunk:
            raise Unavailable("the node closed the connection during the handshake")
        buffer += chunk


def open_channel(target: Target, timeout_s: float) -> socket.socket:
    """A socket to the node's CLI channel on which both sides have proved the cookie."""
    if not target.dist_port:
        raise Unavailable("the node's distribution port is not known (set RABBITMQ_DIST_PORT)")
    cookie = read_cookie()
    if cookie is None:
        raise Unavailable("no Erlang cookie: $HOME/.erlang.cookie is missing, RABBITMQ_ERLANG_COOKIE unset")
    try:
        sock = socket.create_connection((target.dist_host, target.dist_port), timeout=timeout_s)
    except OSError as error:
        raise Unavailable(_reason(error)) from None
    try:
        hello = _read_frame(sock)
        if hello.get("protocol") != wire.PROTOCOL or not isinstance(hello.get("challenge"), str):
            raise Unavailable("not a WarrenMQ node's distribution port")
        mine = wire.challenge()
        proof = wire.cli_digest(cookie, hello["challenge"], mine, target.node)
        sock.sendall(wire.encode_frame({"node": target.node, "challenge": mine, "digest": proof}))
        answer = _read_frame(sock)
        if "error" in answer:
            if answer["error"] == wire.NOT_ALLOWED:
                raise Unavailable(
                    "TCP connection succeeded but the node refused the CLI: check that the Erlang cookie "
                    "($HOME/.erlang.cookie) is the node's"
                )
            raise Unavailable(str(answer.get("reason", answer["error"])))
        expected = wire.node_digest(cookie, hello["challenge"], mine, target.node)
        if not wire.same(answer.get("digest"), expected):
            raise Unavailable("the node did not prove the Erlang cookie")
    except (OSError, wire.HandshakeError) as error:
        sock.close()
        raise Unavailable(_reason(error) if isinstance(error, OSError) else str(error)) from None
    except Unavailable:
        sock.close()
        raise
    return sock


class Api:
    def __init__(self, target: Target, timeout_s: float) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.connection = http.client.HTTPConnection("localhost", timeout=timeout_s)
        self.connection.sock = open_channel(target, timeout_s)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: tuple[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if auth is not None:
            sent["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        data = None if body is None else json.dumps(body).encode()
        if self.connection.sock is None:  # the node closed the previous exchange's connection
            self.connection.sock = open_channel(self.target, self.timeout_s)
        try:
            self.connection.request(method, path, body=data, headers=sent)
            response = self.connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            raise Unavailable(_reason(error) if isinstance(error, OSError) else str(error)) from None
        if response.status >= 400:
            text = raw.decode(errors="replace")
            try:
                reason = str(json.loads(text).get("reason", text))
            except (ValueError, AttributeError):
                reason = text
            raise ApiFailure(response.status, reason)
        return json.loads(raw) if raw.strip() else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def wait_closed(self) -> None:
        """Until the node drops the channel (``stop``: the node is shutting down) or the timeout."""
        sock = self.connection.sock
        if sock is None:
            return
        try:
            while sock.recv(4096):
                pass
        except OSError:
            pass
        self.connection.close()
