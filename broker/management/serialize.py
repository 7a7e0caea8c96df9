"""Entities as RabbitMQ 3.13's management API serialises them, every key present: truthful values where
WarrenMQ has the concept, RabbitMQ-typed neutral values (0, null, [], {}) where it has none."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import quote_plus

from broker.core.access import TopicPermission, User, VhostPermission
from broker.core.exchange import Exchange
from broker.core.policies import effective_definition
from broker.core.queue import Queue
from broker.core.vhost import VirtualHost
from broker.management.stream_info import ready_messages, stream_bytes, stream_keys, stream_of

RATE = {"rate": 0.0}
# The garbage_collection object of an Erlang process; WarrenMQ has no per-entity process, so neutral values.
_GC = {"fullsweep_after": 0, "max_heap_size": 0, "min_bin_vheap_size": 0, "min_heap_size": 0, "minor_gcs": 0}


def queue_type(queue: Queue) -> str:
    kind = queue.arguments.get("x-queue-type")
    return kind if kind in ("classic", "quorum", "stream") else "classic"


def queue_json(queue: Queue, node: str) -> dict[str, Any]:
    ready = len(queue.ready)
    unacked = queue.unacked
    ready_bytes = 0
    persistent = 0
    persistent_bytes = 0
    for envelope in queue.ready:
        size = len(envelope.message.body)
        ready_bytes += size
        if envelope.message.delivery_mode == 2:
            persistent += 1
            persistent_bytes += size
    stream = stream_of(queue)
    if stream is not None:  # every entry of its log is on disk
        ready = persistent = stream.log.message_count
        ready_bytes = persistent_bytes = stream_bytes(stream)
    consumers = len(queue.consumers)
    exclusive_tag = next((c.consumer_tag for c in queue.consumers if c.exclusive), None)
    single_active = queue.arguments.get("x-single-active-consumer") is True
    return {
        "arguments": dict(queue.arguments),
        "auto_delete": queue.auto_delete,
        "backing_queue_status": {"mode": "default", "len": ready, "version": 2},
        "consumer_capacity": 1.0 if consumers else 0,
        "consumer_utilisation": 1.0 if consumers else 0,
        "consumers": consumers,
        "durable": queue.durable,
        "effective_policy_definition": effective_definition(queue.policy, queue.operator_policy) or {},
        "exclusive": queue.exclusive,
        "exclusive_consumer_tag": exclusive_tag,
        "garbage_collection": dict(_GC),
        "head_message_timestamp": None,
        "idle_since": None,
        "memory": 0,
        "message_bytes": ready_bytes,
        "message_bytes_paged_out": 0,
        "message_bytes_persistent": persistent_bytes,
        "message_bytes_ram": ready_bytes if stream is None else stream.ram_bytes,
        "message_bytes_ready": ready_bytes,
        "message_bytes_unacknowledged": 0,
        "messages": ready + unacked if stream is None else ready,  # a stream's deliveries stay in its log
        "messages_details": dict(RATE),
        "messages_paged_out": 0,
        "messages_persistent": persistent,
        "messages_ram": ready + unacked,
        "messages_ready": ready,
        "messages_ready_details": dict(RATE),
        "messages_ready_ram": ready,
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_details": dict(RATE),
        "messages_unacknowledged_ram": unacked,
        "name": queue.name,
        "node": node,
        "operator_policy": queue.operator_policy.name if queue.operator_policy is not None else None,
        "policy": queue.policy.name if queue.policy is not None else None,
        "recoverable_slaves": None,
        "reductions": 0,
        "reductions_details": dict(RATE),
        "single_active_consumer_tag": (
            queue.consumers[0].consumer_tag if single_active and queue.consumers else None
        ),
        "state": "running",
        "storage_version": 2,
        "type": queue_type(queue),
        "vhost": queue.vhost,
        **(stream_keys(stream, node) if stream is not None else {}),
    }


def exchange_json(exchange: Exchange, vhost: str) -> dict[str, Any]:
    # "policy" is there only while one applies (RabbitMQ 3.10.8 leaves the key out otherwise).
    policy = {"policy": exchange.policy.name} if exchange.policy is not None else {}
    return {
        "arguments": dict(exchange.arguments),
        "auto_delete": exchange.auto_delete,
        "durable": exchange.durable,
        "internal": exchange.internal,
        "name": exchange.name,
        **policy,
        "type": exchange.type_name,
        # RabbitMQ names the declaring user; WarrenMQ does not record it, so only built-ins are attributed.
        "user_who_performed_action": "rmq-internal" if _builtin(exchange.name) else "",
        "vhost": vhost,
    }


def _builtin(name: str) -> bool:
    return name == "" or name.startswith("amq.")


def _quote(text: str) -> str:
    # rabbit_mgmt_format:quote_binding: form-urlencoded, "~" escaped because it separates the two parts.
    return quote_plus(text, safe="").replace("~", "%7E")


def arguments_hash(arguments: dict[str, Any]) -> str:
    """A stable 4-byte base64url digest of binding arguments. RabbitMQ uses erlang:phash2 of its table here;
    the key is opaque to clients (they read it from listings), so only its shape is RabbitMQ's."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()[:4]).decode().rstrip("=")


def properties_key(routing_key: str, arguments: dict[str, Any]) -> str:
    """rabbit_mgmt_format:pack_binding_props: "~" for an empty key without arguments."""
    if not arguments:
        return _quote(routing_key) if routing_key else "~"
    return f"{_quote(routing_key)}~{_quote(arguments_hash(arguments))}"


def binding_json(
    source: str,
    vhost: str,
    destination: str,
    destination_type: str,
    routing_key: str,
    arguments: dict[str, Any],
) -> dict[str, Any]:
    return {
        "arguments": dict(arguments),
        "destination": destination,
        "destination_type": destination_type,
        "properties_key": properties_key(routing_key, arguments),
        "routing_key": routing_key,
        "source": source,
        "vhost": vhost,
    }


def vhost_bindings(vhost: VirtualHost) -> list[dict[str, Any]]:
    """Every binding of a vhost; each queue's implicit default-exchange binding first, as RabbitMQ lists."""
    rows = [binding_json("", vhost.name, name, "queue", name, {}) for name in sorted(vhost.queues)]
    for binding in vhost.bindings:
        rows.append(
            binding_json(
                binding.source.name,
                vhost.name,
                getattr(binding.destination, "name", ""),
                "exchange" if binding.is_e2e else "queue",
                binding.routing_key,
                dict(binding.args),
            )
        )
    return rows


def vhost_json(vhost: VirtualHost, node: str, metadata: dict[str, Any]) -> dict[str, Any]:
    ready = sum(ready_messages(queue) for queue in vhost.queues.values())
    unacked = sum(queue.unacked for queue in vhost.queues.values())
    description = str(metadata.get("description", ""))
    tags = list(metadata.get("tags", []))
    return {
        "cluster_state": {node: "running"},
        "default_queue_type": metadata.get("default_queue_type", "undefined"),
        "description": description,
        "messages": ready + unacked,
        "messages_details": dict(RATE),
        "messages_ready": ready,
        "messages_ready_details": dict(RATE),
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_details": dict(RATE),
        "metadata": {"description": description, "tags": tags},
        "name": vhost.name,
        "recv_oct": 0,
        "recv_oct_details": dict(RATE),
        "send_oct": 0,
        "send_oct_details": dict(RATE),
        "tags": tags,
        "tracing": False,
    }


def user_json(user: User) -> dict[str, Any]:
    return {
        "hashing_algorithm": user.hashing_algorithm,
        "limits": dict(user.limits),
        "name": user.name,
        "password_hash": user.password_hash,
        "tags": list(user.tags),
    }


def permission_json(permission: VhostPermission) -> dict[str, Any]:
    return {
        "configure": permission.configure,
        "read": permission.read,
        "user": permission.user,
        "vhost": permission.vhost,
        "write": permission.write,
    }


def topic_permission_json(permission: TopicPermission) -> dict[str, Any]:
    return {
        "exchange": permission.exchange,
        "read": permission.read,
        "user": permission.user,
        "vhost": permission.vhost,
        "write": permission.write,
    }
