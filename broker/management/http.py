"""A minimal HTTP/1.1 server on asyncio streams (no framework): one request per connection, JSON answers,
basic auth checked against the broker's users.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
}


@dataclass
class Request:
    method: str
    segments: list[str]  # the path split on "/" then percent-decoded ("%2F" is the vhost "/")
    headers: dict[str, str]
    body: bytes
    user: str = ""


@dataclass
class Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    return str(value)


def basic_auth(headers: dict[str, str]) -> tuple[str, str] | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


async def _read_request(reader: asyncio.StreamReader) -> Request | Response:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        return Response(413, {"error": "bad_request", "reason": "headers too large"})
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return Response(400, {"error": "bad_request", "reason": "malformed request line"})
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY_BYTES:
        return Response(413, {"error": "bad_request", "reason": "body too large"})
    body = await reader.readexactly(length) if length else b""
    raw_path = urlsplit(target).path
    segments = [unquote(segment) for segment in raw_path.strip("/").split("/") if segment != ""]
    return Request(method.upper(), segments, headers, body)


async def _write(writer: asyncio.StreamWriter, response: Response) -> None:
    payload = b"" if response.body is None else json.dumps(response.body, default=_json_default).encode()
    head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Error')}"]
    headers = {"content-type": "application/json", "connection": "close", **response.headers}
    headers["content-length"] = str(len(payload))
    head += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
    await writer.drain()


async def serve_http(host: str, port: int, handler: Handler) -> asyncio.Server:
    """Start listening; each connection carries one request and gets one response."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            response = request if isinstance(request, Response) else await handler(request)
            await _write(writer, response)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_client, host, port, limit=MAX_HEADER_BYTES, reuse_address=True)
