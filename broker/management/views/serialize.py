"""Entities as RabbitMQ 3.13's management API serialises them, every key present: truthful values where
WarrenMQ has the concept, RabbitMQ-typed neutral values (0, null, [], {}) where it has none."""

from __future__ import annotations

from typing import Any

from broker.core.access.access import TopicPermission, User, VhostPermission
from broker.core.exchanges.exchange import Exchange
from broker.core.policies.policies import effective_definition
from broker.core.queues import queue_bytes
from broker.core.queues.queue import Queue
from broker.core.streams.lookup import stream_of
from broker.core.streams.stream_queue import StreamPath
from broker.core.topology.vhost import VirtualHost
from broker.management.stats.stream_info import ready_messages, stream_bytes, stream_keys
from broker.management.views.binding_key import properties_key

RATE = {"rate": 0.0}
# The garbage_collection object of an Erlang process; WarrenMQ has no per-entity process, so neutral values.
_GC = {"fullsweep_after": 0, "max_heap_size": 0, "min_bin_vheap_size": 0, "min_heap_size": 0, "minor_gcs": 0}


def queue_type(queue: Queue) -> str:
    kind = queue.arguments.get("x-queue-type")
    return kind if kind in ("classic", "quorum", "stream") else "classic"


def queue_counts(queue: Queue) -> dict[str, int]:
    """The message and byte figures of a queue, read from its counters (broker.core.queues.queue_bytes)."""
    stream = stream_of(queue)
    if stream is not None:
        return _stream_counts(queue, stream)
    ready = len(queue.ready) + len(queue.fresh)
    unacked = queue.unacked
    message_bytes = queue.ready_bytes + queue.unacked_bytes
    return {
        "memory": queue_bytes.memory(queue, ready),
        "message_bytes": message_bytes,
        "message_bytes_paged_out": queue.paged_bytes,
        "message_bytes_persistent": queue.persistent_ready_bytes + queue.persistent_unacked_bytes,
        "message_bytes_ram": message_bytes - queue.paged_bytes,
        "message_bytes_ready": queue.ready_bytes,
        "message_bytes_unacknowledged": queue.unacked_bytes,
        "messages": ready + unacked,
        "messages_paged_out": queue.paged,
        "messages_persistent": queue.persistent_ready + queue.persistent_unacked,
        "messages_ram": ready + unacked - queue.paged,
        "messages_ready": ready,
        "messages_ready_ram": ready - queue.paged,
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_ram": unacked,
    }


def _stream_counts(queue: Queue, stream: StreamPath) -> dict[str, int]:
    """A stream's figures come from its log: every entry is on disk, and a delivery leaves it there."""
    count, size, unacked = stream.log.message_count, stream_bytes(stream), queue.unacked
    return {
        "memory": 0,
        "message_bytes": size,
        "message_bytes_paged_out": 0,
        "message_bytes_persistent": size,
        "message_bytes_ram": stream.ram_bytes,  # closed segments are read back from their files
        "message_bytes_ready": size,
        "message_bytes_unacknowledged": 0,
        "messages": count,
        "messages_paged_out": 0,
        "messages_persistent": count,
        "messages_ram": count + unacked,
        "messages_ready": count,
        "messages_ready_ram": count,
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_ram": unacked,
    }


def queue_json(queue: Queue, node: str) -> dict[str, Any]:
    counts = queue_counts(queue)
    stream = stream_of(queue)
    ready = counts["messages_ready"]
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
        **counts,
        "messages_details": dict(RATE),
        "messages_ready_details": dict(RATE),
        "messages_unacknowledged_details": dict(RATE),
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


# rabbit_mgmt_wm_bindings sorts every binding listing by these ("type" is no key of a binding: a constant);
# rows that tie on all of them come in the order of the rest of RabbitMQ's row, destination_type first.
BINDING_SORT = ("vhost", "source", "type", "destination", "routing_key", "properties_key")


def vhost_bindings(vhost: VirtualHost) -> list[dict[str, Any]]:
    """Every binding of a vhost (the implicit default-exchange ones included), in RabbitMQ's listing order."""
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
    rows.sort(key=lambda row: row["destination_type"])  # the tie-breaker; reply_list sorts by BINDING_SORT
    return rows


def vhost_json(vhost: VirtualHost, node: str, metadata: dict[str, Any]) -> dict[str, Any]:
    ready = sum(ready_messages(queue) for queue in vhost.queues.values())
    unacked = sum(queue.unacked for queue in vhost.queues.values())
    description = str(metadata.get("description", ""))
    tags = list(metadata.get("tags", []))
    queue_type = metadata.get("default_queue_type", "undefined")
    shown_metadata: dict[str, Any] = {"description": description, "tags": tags}
    if vhost.profile.management_4x:
        # 4.0 reports the node's default, classic, for a vhost without one, in its metadata too.
        queue_type = metadata.get("default_queue_type", "classic")
        shown_metadata["default_queue_type"] = queue_type
    return {
        "cluster_state": {node: "running"},
        "default_queue_type": queue_type,
        "description": description,
        "messages": ready + unacked,
        "messages_details": dict(RATE),
        "messages_ready": ready,
        "messages_ready_details": dict(RATE),
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_details": dict(RATE),
        "metadata": shown_metadata,
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
