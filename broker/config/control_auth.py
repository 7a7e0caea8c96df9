"""The handshake of the CLI channel, computed alike by the node (broker/management/control.py) and the CLIs
(broker/ctl/api.py): RabbitMQ's CLIs reach a node over Erlang distribution, where both ends prove they
hold the same Erlang cookie by answering each other's random challenge, never sending the cookie itself.
Here the proofs are HMAC-SHA256 digests keyed with the cookie, in length-prefixed JSON frames:

    node -> cli   {"protocol": PROTOCOL, "node": "rabbit@host", "challenge": hex}
    cli  -> node  {"node": "rabbit@host", "challenge": hex, "digest": hex}   (the node it means to reach)
    node -> cli   {"digest": hex}  or  {"error": "...", "reason": "..."} and the node closes

after which the connection carries HTTP/1.1 requests to the management API's routes."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct
from typing import Any

PROTOCOL = "warrenmq-cli/1"
LENGTH = struct.Struct(">I")
# Frames of the handshake are small; anything larger before authentication is refused unread.
MAX_FRAME_BYTES = 4096
WRONG_NODE = "wrong_node"
NOT_ALLOWED = "not_allowed"


class HandshakeError(Exception):
    """The peer broke the handshake (malformed frame, wrong digest, another node)."""


def challenge() -> str:
    return secrets.token_hex(16)


def cli_digest(cookie: str, node_challenge: str, cli_challenge: str, node: str) -> str:
    """The CLI's proof: it answers the node's challenge for the node it names."""
    message = f"cli|{node_challenge}|{cli_challenge}|{node}".encode()
    return hmac.new(cookie.encode(), message, hashlib.sha256).hexdigest()


def node_digest(cookie: str, node_challenge: str, cli_challenge: str, node: str) -> str:
    """The node's proof, over the CLI's challenge (a node without the cookie cannot impersonate)."""
    message = f"node|{cli_challenge}|{node_challenge}|{node}".encode()
    return hmac.new(cookie.encode(), message, hashlib.sha256).hexdigest()


def same(given: Any, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())


def encode_frame(body: dict[str, Any]) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return LENGTH.pack(len(data)) + data


def decode_frame(buffer: bytes | bytearray) -> tuple[dict[str, Any], int] | None:
    """The first complete frame of ``buffer`` and its size, or None when more bytes are needed."""
    if len(buffer) < LENGTH.size:
        return None
    (size,) = LENGTH.unpack_from(buffer)
    if size > MAX_FRAME_BYTES:
        raise HandshakeError(f"handshake frame of {size} bytes")
    end = LENGTH.size + size
    if len(buffer) < end:
        return None
    try:
        body = json.loads(bytes(buffer[LENGTH.size : end]))
    except ValueError:
        raise HandshakeError("handshake frame is not JSON") from None
    if not isinstance(body, dict):
        raise HandshakeError("handshake frame is not an object")
    return body, end
