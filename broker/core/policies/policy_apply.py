"""Applying policies to queues and exchanges: each entity's effective settings from its arguments and the
policy/operator-policy definition, re-applied to running entities whenever a policy changes.

Arguments against policy follow each key's resolver in RabbitMQ 3.13: for classic queues
(rabbit_amqqueue_process:process_args_policy) the smaller of argument and policy for expires, message-ttl,
max-length and max-length-bytes, the argument for dead-letter-exchange/-routing-key and overflow; quorum
queues (rabbit_quorum_queue:gather_policy_config) the same, except overflow where the policy wins and
delivery-limit where the smaller wins; for exchanges the alternate-exchange argument wins (rabbit_policy:
get_arg). The definition used is the effective one (policy merged with the operator policy).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from broker.core.exchanges.exchange import Exchange
from broker.core.model.profile import Profile
from broker.core.policies.policies import PolicyTable, effective_definition
from broker.core.queues.queue import Queue, QueueHost
from broker.core.queues.queue_features import QueueFeatures
from broker.core.queues.queue_paging import PagedQueue
from broker.core.queues.queue_settings import PLAIN, QUORUM, STREAM, QueueSettings, compile_settings, max_age

# policy key -> (QueueSettings field, queue argument)
_MIN_KEYS = {
    "expires": ("expires", "x-expires"),
    "message-ttl": ("message_ttl", "x-message-ttl"),
    "max-length": ("max_length", "x-max-length"),
    "max-length-bytes": ("max_length_bytes", "x-max-length-bytes"),
}
# A stream's policy keys: max-length-bytes, max-age and the segment size (retention applies at once).
_STREAM_KEYS = {
    "max-length-bytes": "max_length_bytes",
    "max-age": "max_age_ms",
    "stream-max-segment-size-bytes": "max_segment_size_bytes",
}
_ARG_KEYS = {
    "dead-letter-exchange": ("dead_letter_exchange", "x-dead-letter-exchange"),
    "dead-letter-routing-key": ("dead_letter_routing_key", "x-dead-letter-routing-key"),
}


def merge_settings(
    base: QueueSettings, args: Mapping[str, Any], definition: Mapping[str, Any]
) -> QueueSettings:
    """``base`` (compiled from the queue's arguments) with an effective policy definition applied."""
    if not definition:
        return base
    changes: dict[str, Any] = {}
    stream = base.queue_type == STREAM
    for key, (field, arg) in _MIN_KEYS.items():
        value = definition.get(key)
        if value is None or (stream and key != "max-length-bytes"):
            continue
        current = getattr(base, field)
        changes[field] = value if arg not in args or current is None else min(current, value)
    if stream:
        # rabbit_stream_queue:update_stream_conf: argument and policy both set -> the smaller wins.
        for key, field in _STREAM_KEYS.items():
            if key not in definition:
                continue
            value = definition[key]
            if key == "max-age":
                value = max_age({"x-max-age": value}, "policy")
            current = getattr(base, field)
            changes[field] = value if current is None else min(current, value)
    if not stream:
        for key, (field, arg) in _ARG_KEYS.items():
            if key in definition and arg not in args:
                changes[field] = definition[key]
        if "overflow" in definition and (base.queue_type == QUORUM or "x-overflow" not in args):
            changes["overflow"] = definition["overflow"]
    if base.queue_type == QUORUM and "delivery-limit" in definition:
        value = definition["delivery-limit"]
        current = base.delivery_limit if "x-delivery-limit" in args else None
        changes["delivery_limit"] = value if current is None else min(current, value)
    return base.replace(**changes) if changes else base


def argument_settings(queue: Queue, profile: Profile) -> QueueSettings:
    """The settings the queue's own arguments give (validated when it was declared)."""
    return compile_settings(
        queue.name,
        queue.vhost,
        queue.arguments,
        queue.durable,
        queue.exclusive,
        queue.auto_delete,
        server_named=False,
        profile=profile,
    )


def apply_to_queue(
    table: PolicyTable, queue: Queue, host: QueueHost, profile: Profile, base: QueueSettings | None = None
) -> bool:
    """Resolve the queue's policies and bring its settings in line; True when something changed."""
    current = queue.features.settings if queue.features is not None else PLAIN
    queue_type = current.queue_type
    policy, operator = table.resolve(queue.vhost, "queue", queue.name, queue_type)
    if base is None and policy is queue.policy and operator is queue.operator_policy:
        return False
    queue.policy, queue.operator_policy = policy, operator
    if base is None:
        base = argument_settings(queue, profile)
    settings = merge_settings(base, queue.arguments, effective_definition(policy, operator) or {})
    if settings == current:
        return True
    if isinstance(queue.features, PagedQueue):
        queue.features.leave()  # a policy's features do not page: the bodies come back first
    if queue.features is None:
        queue.features = QueueFeatures(queue, settings, host)
    queue.features.apply_settings(settings)  # a stream's retention and segment size too
    return True


def apply_to_exchange(table: PolicyTable, vhost: str, exchange: Exchange) -> bool:
    """Resolve the exchange's policies; its alternate exchange follows (the argument wins)."""
    if exchange.is_default:
        return False
    policy, operator = table.resolve(vhost, "exchange", exchange.name)
    if policy is exchange.policy and operator is exchange.operator_policy:
        return False
    exchange.policy, exchange.operator_policy = policy, operator
    definition = effective_definition(policy, operator) or {}
    alternate = definition.get("alternate-exchange")
    exchange.set_policy_alternate_exchange(alternate if isinstance(alternate, str) else None)
    return True


def reapply(
    table: PolicyTable,
    vhost: str,
    queues: Iterable[Queue],
    exchanges: Iterable[Exchange],
    host: QueueHost,
    profile: Profile,
) -> list[Queue]:
    """A policy of ``vhost`` was set, changed or cleared: every queue and exchange it may touch follows now
    (rabbit_policy:update_matched_objects). The queues whose policy or operator policy changed."""
    for exchange in list(exchanges):
        apply_to_exchange(table, vhost, exchange)
    return [
        queue for queue in list(queues) if not queue.deleted and apply_to_queue(table, queue, host, profile)
    ]
