"""rabbitmqctl's list_* commands: RabbitMQ 3.10's banners, default columns and info keys, read from the
management API's rows (which carry RabbitMQ's info-key names)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.ctl.api import Api, ApiFailure, quote


@dataclass(frozen=True)
class Listing:
    banner: str  # {vhost} is replaced
    path: str  # {vhost} is replaced by the quoted vhost
    default: tuple[str, ...]
    keys: tuple[str, ...]  # the info keys WarrenMQ answers
    row: Callable[[dict[str, Any]], dict[str, Any]] = lambda item: item
    json_columns: tuple[str, ...] = ()


def _binding(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "source_name": item["source"],
        "source_kind": "exchange",
        "destination_name": item["destination"],
        "destination_kind": item["destination_type"],
        "routing_key": item["routing_key"],
        "arguments": item.get("arguments", {}),
        "vhost": item["vhost"],
    }


def _channel(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "pid": item["name"], "connection": item["connection_details"]["name"]}


def _consumer(item: dict[str, Any]) -> dict[str, Any]:
    return {
        **item,
        "queue_name": item["queue"]["name"],
        "channel_pid": item["channel_details"]["name"],
        "arguments": item.get("arguments", {}),
    }


def _user(item: dict[str, Any]) -> dict[str, Any]:
    tags = item["tags"] if isinstance(item["tags"], list) else [t for t in item["tags"].split(",") if t]
    return {"user": item["name"], "tags": tags}


QUEUE_KEYS = (
    "name",
    "durable",
    "auto_delete",
    "arguments",
    "policy",
    "exclusive",
    "messages_ready",
    "messages_unacknowledged",
    "messages",
    "consumers",
    "memory",
    "state",
    "type",
    "vhost",
)
LISTINGS: dict[str, Listing] = {
    "list_queues": Listing(
        "Timeout: {timeout} seconds ...\nListing queues for vhost {vhost} ...",
        "/api/queues/{vhost}",
        ("name", "messages"),
        QUEUE_KEYS,
    ),
    "list_exchanges": Listing(
        "Listing exchanges for vhost {vhost} ...",
        "/api/exchanges/{vhost}",
        ("name", "type"),
        ("name", "type", "durable", "auto_delete", "internal", "arguments", "policy", "vhost"),
    ),
    "list_bindings": Listing(
        "Listing bindings for vhost {vhost}...",
        "/api/bindings/{vhost}",
        ("source_name", "source_kind", "destination_name", "destination_kind", "routing_key", "arguments"),
        (
            "source_name",
            "source_kind",
            "destination_name",
            "destination_kind",
            "routing_key",
            "arguments",
            "vhost",
        ),
        _binding,
    ),
    "list_connections": Listing(
        "Listing connections ...",
        "/api/connections",
        ("user", "peer_host", "peer_port", "state"),
        (
            "name",
            "port",
            "host",
            "peer_port",
            "peer_host",
            "ssl",
            "ssl_protocol",
            "type",
            "protocol",
            "auth_mechanism",
            "user",
            "vhost",
            "timeout",
            "frame_max",
            "channel_max",
            "client_properties",
            "connected_at",
            "state",
            "channels",
            "user_provided_name",
            "node",
        ),
    ),
    "list_channels": Listing(
        "Listing channels ...",
        "/api/channels",
        ("pid", "user", "consumer_count", "messages_unacknowledged"),
        (
            "pid",
            "connection",
            "name",
            "number",
            "user",
            "vhost",
            "transactional",
            "confirm",
            "consumer_count",
            "messages_unacknowledged",
            "messages_unconfirmed",
            "messages_uncommitted",
            "acks_uncommitted",
            "prefetch_count",
            "global_prefetch_count",
        ),
        _channel,
    ),
    "list_consumers": Listing(
        "Listing consumers in vhost {vhost} ...",
        "/api/consumers/{vhost}",
        (
            "queue_name",
            "channel_pid",
            "consumer_tag",
            "ack_required",
            "prefetch_count",
            "active",
            "arguments",
        ),
        (
            "queue_name",
            "channel_pid",
            "consumer_tag",
            "ack_required",
            "prefetch_count",
            "active",
            "arguments",
        ),
        _consumer,
    ),
    "list_users": Listing(
        "Listing users ...", "/api/users", ("user", "tags"), ("user", "tags"), _user, ("tags",)
    ),
    "list_vhosts": Listing(
        "Listing vhosts ...",
        "/api/vhosts",
        ("name",),
        ("name", "tracing", "description", "tags", "default_queue_type", "cluster_state", "metadata"),
        json_columns=("tags",),
    ),
}


def fetch_rows(api: Api, listing: Listing, vhost: str) -> list[dict[str, Any]]:
    """The rows; none for a vhost that does not exist (RabbitMQ lists nothing and exits 0)."""
    try:
        items = api.get(listing.path.replace("{vhost}", quote(vhost)))
    except ApiFailure as error:
        if error.status != 404:
            raise
        return []
    return [listing.row(item) for item in items]


def unsupported(listing: Listing, columns: tuple[str, ...]) -> list[str]:
    return [c for c in columns if c not in listing.keys]
