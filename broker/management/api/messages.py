"""Messages in and out of the HTTP API: `POST .../publish` bodies to broker messages, and messages to the
objects `POST .../get` answers (payload encodings "string"/"base64"/"auto", truncation), as
rabbit_mgmt_wm_exchange_publish and rabbit_mgmt_wm_queue_get do."""

from __future__ import annotations

import base64
import binascii
import datetime
from typing import Any

from pamqp import commands

from broker.core.model.message import Message
from broker.management.errors import bad_request
from protocol.codec import RABBIT_PROPERTY_NAMES, encode_header_payload, set_properties

# RabbitMQ names to pamqp names, for the properties a publish body may set.
_PAMQP_NAMES = {rabbit_name: name for name, rabbit_name in RABBIT_PROPERTY_NAMES}
_INTEGER_PROPERTIES = ("delivery_mode", "priority")


def _payload(body: dict[str, Any]) -> bytes:
    payload = body["payload"]
    encoding = body["payload_encoding"]
    if not isinstance(payload, str):
        raise bad_request("payload must be a string")
    if encoding == "string":
        return payload.encode()
    if encoding == "base64":
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise bad_request("not_base64") from None
    raise bad_request(f"invalid_payload_encoding {encoding}")


def build_message(exchange: str, body: dict[str, Any]) -> Message:
    """The message a publish body describes; bad properties or payloads are 400 before anything is routed."""
    payload = _payload(body)
    given = body.get("properties") or {}
    routing_key = body["routing_key"]
    if not isinstance(given, dict) or not isinstance(routing_key, str):
        raise bad_request("properties must be an object and routing_key a string")
    fields: dict[str, Any] = {}
    for name, value in given.items():
        if name not in _PAMQP_NAMES:
            continue  # RabbitMQ ignores keys it does not know
        if name in _INTEGER_PROPERTIES or name == "timestamp":
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad_request(f"invalid property {name}")
            fields[name] = (
                datetime.datetime.fromtimestamp(value, tz=datetime.UTC) if name == "timestamp" else value
            )
        elif name == "headers":
            if not isinstance(value, dict):
                raise bad_request("headers must be an object")
            fields[name] = value
        else:
            fields[_PAMQP_NAMES[name]] = str(value)
    properties = commands.Basic.Properties(**fields)
    header = encode_header_payload(len(payload), properties)
    return Message(
        exchange,
        routing_key,
        header,
        payload,
        headers=fields.get("headers"),
        delivery_mode=int(fields.get("delivery_mode") or 1),
        priority=fields.get("priority"),
        expiration=fields.get("expiration"),
    )


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def properties_json(header_payload: bytes) -> dict[str, Any]:
    """The properties a message carries, only those set (RabbitMQ omits unset ones)."""
    if not header_payload:
        return {}
    return {name: _plain(value) for name, value in set_properties(header_payload).items()}


def message_json(
    message: Message, redelivered: bool, remaining: int, encoding: str, truncate: int | None
) -> dict[str, Any]:
    body = message.body
    shown = body[:truncate] if truncate is not None else body
    payload_encoding = "base64"
    payload = base64.b64encode(shown).decode()
    if encoding == "auto":
        try:
            payload = shown.decode("utf-8")
            payload_encoding = "string"
        except UnicodeDecodeError:
            pass
    # rabbit_mgmt_format:basic_properties drops undefined fields; none left is the empty proplist, which
    # rabbit_json writes as [] (a message published without properties shows "properties": []).
    properties: dict[str, Any] | list[Any] = properties_json(message.header_payload) or []
    return {
        "exchange": message.exchange,
        "message_count": remaining,
        "payload": payload,
        "payload_bytes": len(body),
        "payload_encoding": payload_encoding,
        "properties": properties,
        "redelivered": redelivered,
        "routing_key": message.routing_key,
    }
