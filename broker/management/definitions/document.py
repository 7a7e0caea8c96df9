"""RabbitMQ definitions files (the JSON of `rabbitmqctl export_definitions` / `GET /api/definitions`):
load and validate one, apply it to a broker before it accepts connections, and export the broker's own.

Applied in RabbitMQ's import order (rabbit_definitions): users (with tags and RabbitMQ password hashes),
vhosts (with metadata), permissions, topic permissions, parameters, global parameters, policies (with user
limits; `definitions_parameters`), queues, exchanges, bindings. A parameter of a plugin's component
(federation, shovel) is rejected with a clear error rather than silently ignored.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from broker import __version__
from broker.core.access.access import AccessError, parse_tags
from broker.core.access.passwords import ALGORITHMS, DEFAULT_ALGORITHM
from broker.core.broker import Broker
from broker.management.definitions import import_log
from broker.management.definitions import parameters as definitions_parameters
from broker.management.views.binding_key import json_arguments
from protocol.errors import AMQPError

_SECTIONS = ("users", "vhosts", "permissions", "topic_permissions", "queues", "exchanges", "bindings")
_REQUIRED: dict[str, tuple[str, ...]] = {
    "users": ("name",),
    "vhosts": ("name",),
    "permissions": ("user", "vhost"),
    "topic_permissions": ("user", "vhost"),
    "queues": ("name", "vhost"),
    "exchanges": ("name", "vhost", "type"),
    "bindings": ("source", "vhost", "destination", "destination_type"),
}


class DefinitionsError(ValueError):
    """A definitions file that cannot be applied; the message names the file and what is wrong."""


def load_definitions(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate ``path``: valid JSON, an object, known sections that are lists of objects with
    their required keys."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise DefinitionsError(f"{where}: cannot read definitions file: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionsError(
            f"{where}: not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    validate_definitions(data, where)
    return data  # type: ignore[no-any-return]


def validate_definitions(data: Any, where: str = "definitions") -> None:
    if not isinstance(data, dict):
        raise DefinitionsError(f"{where}: expected a JSON object at the top level, got {type(data).__name__}")
    _check_parameters(data, None, where)
    for section in _SECTIONS:
        items = data.get(section, [])
        if not isinstance(items, list):
            raise DefinitionsError(f"{where}: '{section}' must be a list, got {type(items).__name__}")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise DefinitionsError(f"{where}: {section}[{index}] must be an object")
            missing = [key for key in _REQUIRED[section] if not isinstance(item.get(key), str)]
            if missing:
                raise DefinitionsError(
                    f"{where}: {section}[{index}] lacks required string field(s) {', '.join(missing)}"
                )
            _check_item(section, index, item, where)


def _check_parameters(data: Mapping[str, Any], vhosts: set[str] | None, where: str) -> None:
    try:
        definitions_parameters.validate(data, vhosts)
    except definitions_parameters.ParameterDefinitionsError as error:
        raise DefinitionsError(f"{where}: {error}") from None


def _check_item(section: str, index: int, item: Mapping[str, Any], where: str) -> None:
    label = f"{where}: {section}[{index}] ('{item.get('name', item.get('source', ''))}')"
    if section == "users":
        if "password_hash" not in item and "password" not in item:
            raise DefinitionsError(f"{label} needs 'password_hash' or 'password'")
        algorithm = item.get("hashing_algorithm", DEFAULT_ALGORITHM)
        if "password_hash" in item and algorithm not in ALGORITHMS:
            raise DefinitionsError(f"{label}: unknown hashing_algorithm '{algorithm}'")
    if section in ("permissions", "topic_permissions"):
        for key in ("configure", "write", "read") if section == "permissions" else ("write", "read"):
            pattern = item.get(key, "")
            try:
                re.compile(pattern if isinstance(pattern, str) else "")
            except re.error as error:
                raise DefinitionsError(f"{label}: invalid regex in '{key}': {error}") from None
    if section == "bindings" and item["destination_type"] not in ("queue", "exchange"):
        raise DefinitionsError(f"{label}: destination_type must be 'queue' or 'exchange'")
    if "arguments" in item and not isinstance(item["arguments"], dict):
        raise DefinitionsError(f"{label}: 'arguments' must be an object")


def apply_definitions(broker: Broker, data: Mapping[str, Any], where: str = "definitions") -> None:
    """Create what ``data`` defines; an entity the broker refuses raises DefinitionsError with its text."""
    validate_definitions(data, where)
    import_log.asked_to_import(data)
    named = {v["name"] for v in data.get("vhosts", [])}
    _check_parameters(data, set(broker.vhosts) | named, where)
    for user in data.get("users", []):
        tags = parse_tags(user.get("tags"))
        if user.get("password_hash") is not None and "password" not in user:
            hashed = (user["password_hash"], user.get("hashing_algorithm", DEFAULT_ALGORITHM))
            broker.save_user(user["name"], password_hash=hashed, tags=tags)
        else:
            broker.save_user(user["name"], password=str(user.get("password", "")), tags=tags)
    for vhost in data.get("vhosts", []):
        metadata = vhost.get("metadata") or {}
        description = vhost.get("description", metadata.get("description", ""))
        entry: dict[str, Any] = {
            "description": description,
            "tags": list(parse_tags(metadata.get("tags", vhost.get("tags")))),
        }
        if vhost.get("default_queue_type") not in (None, "undefined"):
            entry["default_queue_type"] = vhost["default_queue_type"]
        broker.add_vhost(vhost["name"], entry)
    # Both kinds of grant: (user, vhost, configure or exchange, write, read).
    grants: tuple[tuple[str, str, Callable[[str, str, str, str, str], object]], ...] = (
        ("permissions", "configure", broker.access.set_permission),
        ("topic_permissions", "exchange", broker.access.set_topic_permission),
    )
    for kind, scope, grant in grants:
        for index, item in enumerate(data.get(kind, [])):
            _known_vhost(broker, kind, index, item, where)
            try:
                grant(
                    item["user"],
                    item["vhost"],
                    item.get(scope, ""),
                    item.get("write", ""),
                    item.get("read", ""),
                )
            except AccessError as error:
                raise DefinitionsError(f"{where}: {kind}[{index}]: {error.reason}") from None
    definitions_parameters.apply(broker, data)
    for kind in ("queues", "exchanges", "bindings"):
        for index, item in enumerate(data.get(kind, [])):
            vhost = _known_vhost(broker, kind, index, item, where)
            try:
                if kind == "queues":
                    vhost.declare_queue(
                        item["name"],
                        owner=None,
                        durable=bool(item.get("durable", True)),
                        auto_delete=bool(item.get("auto_delete", False)),
                        arguments=item.get("arguments") or {},
                    )
                elif kind == "exchanges":
                    vhost.declare_exchange(
                        item["name"],
                        item["type"],
                        durable=bool(item.get("durable", True)),
                        auto_delete=bool(item.get("auto_delete", False)),
                        internal=bool(item.get("internal", False)),
                        arguments=item.get("arguments") or {},
                    )
                elif item["destination_type"] == "queue":
                    vhost.bind_queue(
                        item["destination"],
                        item["source"],
                        item.get("routing_key", ""),
                        json_arguments(item.get("arguments") or {}),
                        owner=None,
                    )
                else:
                    vhost.bind_exchange(
                        item["destination"],
                        item["source"],
                        item.get("routing_key", ""),
                        json_arguments(item.get("arguments") or {}),
                    )
            except AMQPError as error:
                raise DefinitionsError(f"{where}: {kind}[{index}]: {error.reply_text}") from None
            except ValueError as error:  # json_arguments: a null argument, as RabbitMQ refuses it
                raise DefinitionsError(f"{where}: {kind}[{index}]: {error}") from None


def _known_vhost(broker: Broker, kind: str, index: int, item: Mapping[str, Any], where: str) -> Any:
    vhost = broker.vhosts.get(item["vhost"])
    if vhost is None:
        raise DefinitionsError(f"{where}: {kind}[{index}]: vhost '{item['vhost']}' is not defined")
    return vhost


def _vhost_entry(broker: Broker, name: str) -> dict[str, Any]:
    """A vhost as RabbitMQ 3.13 exports it: limits, and metadata with description and tags."""
    metadata = broker.vhost_metadata.get(name, {})
    entry: dict[str, Any] = {
        "name": name,
        "limits": dict(broker.parameters.vhost_limits.get(name) or {}) or [],
        "metadata": {"description": metadata.get("description", ""), "tags": list(metadata.get("tags", []))},
    }
    if "default_queue_type" in metadata:
        entry["metadata"]["default_queue_type"] = metadata["default_queue_type"]
    return entry


def export_definitions(broker: Broker) -> dict[str, Any]:
    """The broker's users, vhosts, durable-or-not non-exclusive queues, user exchanges and bindings."""
    access = broker.access
    users = [
        {
            "name": user.name,
            "password_hash": user.password_hash,
            "hashing_algorithm": user.hashing_algorithm,
            "tags": list(user.tags),
            "limits": dict(user.limits),
        }
        for _, user in sorted(access.users.items())
    ]
    vhosts = sorted(broker.vhosts)
    definitions: dict[str, Any] = {
        "rabbit_version": __version__,
        "rabbitmq_version": __version__,
        "product_name": "WarrenMQ",
        "product_version": __version__,
        "users": users,
        "vhosts": [_vhost_entry(broker, name) for name in vhosts],
        "permissions": [
            {"user": p.user, "vhost": p.vhost, "configure": p.configure, "write": p.write, "read": p.read}
            for _, p in sorted(access.permissions.items())
        ],
        "topic_permissions": [
            {"user": t.user, "vhost": t.vhost, "exchange": t.exchange, "write": t.write, "read": t.read}
            for _, t in sorted(access.topic_permissions.items())
        ],
        **definitions_parameters.export(broker),
        "queues": [],
        "exchanges": [],
        "bindings": [],
    }
    for name in vhosts:
        vhost = broker.vhosts[name]
        for queue in vhost.queues.values():
            if not queue.exclusive:
                definitions["queues"].append(
                    {
                        "name": queue.name,
                        "vhost": name,
                        "durable": queue.durable,
                        "auto_delete": queue.auto_delete,
                        "arguments": dict(queue.arguments),
                    }
                )
        for exchange in vhost.exchanges.values():
            if exchange.name and not exchange.name.startswith("amq."):
                definitions["exchanges"].append(
                    {
                        "name": exchange.name,
                        "vhost": name,
                        "type": exchange.type_name,
                        "durable": exchange.durable,
                        "auto_delete": exchange.auto_delete,
                        "internal": exchange.internal,
                        "arguments": dict(exchange.arguments),
                    }
                )
        for binding in vhost.bindings:
            destination = binding.destination
            if getattr(destination, "exclusive", False):
                continue
            definitions["bindings"].append(
                {
                    "source": binding.source.name,
                    "vhost": name,
                    "destination": getattr(destination, "name", ""),
                    "destination_type": "exchange" if binding.is_e2e else "queue",
                    "routing_key": binding.routing_key,
                    "arguments": binding.args,
                }
            )
    return definitions
