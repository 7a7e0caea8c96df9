"""The notices RabbitMQ 3.10 sends through rabbit_event when users, vhosts, policies, limits and runtime
parameters change (the event exchange's user.*, vhost.*, policy.*, parameter.*, *.limits.* keys), built
only while something listens (``EventBus.notices``). Quirks are RabbitMQ's own and kept: an operator policy
is also a parameter.set, clearing a global parameter is notified as parameter.set, vhost.limits.* have no
vhost field, and every exchange.delete is bracketed by an exchange-delete-in-progress parameter."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from broker.core.model.acting import INTERNAL
from broker.core.model.event_types import Topology

if TYPE_CHECKING:
    from broker.core.events.events import EventBus
    from broker.core.exchanges.exchange import Exchange
    from broker.core.policies.policies import Policy
    from broker.core.queues.queue import Queue

LIMITS = "limits"  # the name RabbitMQ gives every vhost-limits and user-limits parameter


def user_saved(events: EventBus, name: str, created: bool, password: bool, tags: tuple[str, ...]) -> None:
    """rabbit_auth_backend_internal:put_user: a new user is user.created, then user.tags.set if it has
    tags; an existing one given a password is user.password.changed then user.tags.set; an existing one
    given a password hash changes silently."""
    if not events.notices:
        return
    if created:
        events.notify("user.created", {"name": name})
        if tags:
            events.notify("user.tags.set", {"name": name, "tags": list(tags)})
    elif password:
        events.notify("user.password.changed", {"name": name})
        events.notify("user.tags.set", {"name": name, "tags": list(tags)})


def vhost_saved(events: EventBus, name: str, metadata: Mapping[str, Any], created: bool) -> None:
    """vhost.created (after its exchanges' exchange.created) or vhost.updated, with the vhost's metadata
    and whether tracing is on (before the request's own tracing change, as RabbitMQ reports it)."""
    if not events.notices:
        return
    tracer = events.tracer
    fields = {
        "name": name,
        "description": str(metadata.get("description", "")),
        "tags": list(metadata.get("tags", [])),
        "default_queue_type": metadata.get("default_queue_type"),
        "tracing": tracer is not None and name in getattr(tracer, "vhosts", ()),
    }
    events.notify("vhost.created" if created else "vhost.updated", fields)


# The order rabbit_vhost:do_add declares a new vhost's exchanges in.
_DECLARED = ("", "amq.direct", "amq.topic", "amq.match", "amq.headers", "amq.fanout", "amq.rabbitmq.trace")


def exchanges_created(events: EventBus, vhost: str, exchanges: list[Exchange]) -> None:
    """A new vhost's own exchanges, each an exchange.created, in the order rabbit_vhost:do_add declares
    them."""
    if events.observers:
        rank = {name: index for index, name in enumerate(_DECLARED)}
        for exchange in sorted(exchanges, key=lambda exchange: rank.get(exchange.name, len(rank))):
            events.topology(
                Topology.EXCHANGE_DECLARED,
                vhost,
                exchange=exchange.name,
                type=exchange.type_name,
                durable=exchange.durable,
                internal=exchange.internal,
                arguments={},
            )


@contextmanager
def exchange_deletion(events: EventBus, vhost: str, name: str) -> Iterator[None]:
    """rabbit_exchange:delete/3 sets the exchange-delete-in-progress parameter around the deletion."""
    fields = {"vhost": vhost, "component": "exchange-delete-in-progress", "name": name}
    events.notify("parameter.set", {**fields, "value": True})
    try:
        yield
    finally:
        events.notify("parameter.cleared", fields)


def vhost_deleted(
    events: EventBus, vhost: str, exchanges: list[Exchange], limits: bool, policies: list[tuple[Policy, bool]]
) -> None:
    """What rabbit_vhost:delete notifies after the queues went: each exchange deleted, vhost.deleted, its
    limits and policies cleared, and vhost.down from the broker itself."""
    if not (events.notices or events.observers):
        return
    for exchange in exchanges:
        with exchange_deletion(events, vhost, exchange.name):
            if events.observers:
                events.topology(Topology.EXCHANGE_DELETED, vhost, exchange=exchange.name)
    events.notify("vhost.deleted", {"name": vhost})
    if limits:
        vhost_limits(events, vhost, None)
    for policy, operator in policies:
        policy_cleared(events, vhost, policy.name, operator, [])
    events.notify("vhost.down", {"name": vhost}, actor=INTERNAL)


def _policy_value(policy: Policy) -> dict[str, Any]:
    return {
        "pattern": policy.pattern,
        "definition": dict(policy.definition),
        "priority": policy.priority,
        "apply-to": policy.apply_to,
    }


def policy_set(events: EventBus, policy: Policy, operator: bool, queues: list[Queue]) -> None:
    """rabbit_policy: an operator policy's parameter.set, the ``queues`` it changed (update_matched_objects),
    then policy.set (an operator policy's too)."""
    if not events.notices:
        return
    value = _policy_value(policy)
    if operator:
        fields = {"vhost": policy.vhost, "component": "operator_policy", "name": policy.name, "value": value}
        events.notify("parameter.set", fields)
    queue_policies(events, queues, policy)
    events.notify("policy.set", {"name": policy.name, "vhost": policy.vhost, **value})


def policy_cleared(events: EventBus, vhost: str, name: str, operator: bool, queues: list[Queue]) -> None:
    """The same order when a policy is cleared; an operator policy's is operator.policy.cleared."""
    if not events.notices:
        return
    if operator:
        events.notify("parameter.cleared", {"vhost": vhost, "component": "operator_policy", "name": name})
    queue_policies(events, queues, None)
    if operator:
        events.notify("operator.policy.cleared", {"name": name, "vhost": vhost})
    else:
        events.notify("policy.cleared", {"name": name, "vhost": vhost})


def queue_policies(events: EventBus, queues: list[Queue], policy: Policy | None) -> None:
    """rabbit_policy:maybe_notify_of_policy_change: each queue whose policy changed, queue.policy.updated
    with the policy just set, or queue.policy.cleared when one was cleared."""
    if not events.notices:
        return
    for queue in queues:
        settings = queue.features.settings if queue.features is not None else None
        kind = settings.queue_type if settings is not None else "classic"
        fields = {"name": queue.name, "vhost": queue.vhost, "type": f"rabbit_{kind}_queue"}
        if policy is None:
            events.notify("queue.policy.cleared", fields)
        else:
            events.notify("queue.policy.updated", {**fields, **_policy_value(policy)})


def vhost_limits(events: EventBus, vhost: str, limits: Mapping[str, Any] | None) -> None:
    """The vhost-limits parameter set (its remaining limits, maybe none) or cleared."""
    if not events.notices:
        return
    fields = {"vhost": vhost, "component": "vhost-limits", "name": LIMITS}
    if limits is None:
        events.notify("parameter.cleared", fields)
        events.notify("vhost.limits.cleared", {"name": LIMITS})
    else:
        events.notify("parameter.set", {**fields, "value": dict(limits)})
        events.notify("vhost.limits.set", {"name": LIMITS, **limits})


def user_limits(events: EventBus, user: str, limits: Mapping[str, int]) -> None:
    if not events.notices:
        return
    if limits:
        events.notify("user.limits.set", {"name": LIMITS, "username": user, **limits})
    else:
        events.notify("user.limits.cleared", {"name": LIMITS, "username": user})


def global_parameter(events: EventBus, name: str, value: Any, cleared: bool = False) -> None:
    """A global parameter set, or cleared: RabbitMQ 3.10's clear_global notifies parameter_set too."""
    if not events.notices:
        return
    fields: dict[str, Any] = {"name": name, "component": "global"}
    if not cleared:
        fields["value"] = value
    events.notify("parameter.set", fields)
