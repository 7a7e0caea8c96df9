"""Build routing topologies from RabbitMQ definitions JSON (the management export), for replay and what-ifs.

Pure: no I/O, no clock, no event loop. It takes the parsed document (or its text) and declares every vhost,
exchange, queue and binding through the `VirtualHost` API, so the topology routes exactly as the broker does:
exchange-to-exchange bindings, alternate exchanges (the ``alternate-exchange`` argument or an
``alternate-exchange`` policy, the argument winning as in docs/ae.md) and typed headers matching included.
Declaration errors carry RabbitMQ's reply text and say which object of the document caused them.

Both export shapes are accepted: the whole-broker one (objects carry ``vhost``) and the per-vhost one (they do
not; ``default_vhost`` is used).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.model.names import NameGenerator
from broker.core.topology.vhost import VirtualHost
from protocol.errors import AMQPError


class DefinitionsError(ValueError):
    """The document is not usable definitions JSON; the message names the offending object."""


class Topology:
    """Virtual hosts built from one definitions document, used only to route (nothing is enqueued)."""

    def __init__(self) -> None:
        self._names = NameGenerator(0)
        self._dispatcher = Dispatcher(_never_called)
        self.vhosts: dict[str, VirtualHost] = {}

    def vhost(self, name: str) -> VirtualHost:
        vhost = self.vhosts.get(name)
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(name, self._dispatcher, self._names)
        return vhost

    def route(
        self, vhost: str, exchange: str, routing_key: str, headers: Mapping[str, Any] | None = None
    ) -> list[str] | None:
        """The names of the queues a publish would reach, in routing order; None when the vhost or the
        exchange does not exist (a publish there is a channel error, 404, and routes nowhere).
        """
        host = self.vhosts.get(vhost)
        if host is None:
            return None
        source = host.exchanges.get(exchange)
        if source is None:
            return None
        message = Message(exchange, routing_key, b"", b"", headers)
        return [queue.name for queue in host.router.route(source, message)]  # type: ignore[attr-defined]


def _never_called(callback: Callable[[], None]) -> None:  # pragma: no cover - nothing is ever enqueued
    raise AssertionError("a definitions topology never dispatches")


def load_definitions(document: Mapping[str, Any] | str | bytes, default_vhost: str = "/") -> Topology:
    """A `Topology` from a definitions document; raises DefinitionsError for anything malformed."""
    if isinstance(document, str | bytes):
        try:
            document = json.loads(document)
        except ValueError as error:
            raise DefinitionsError(f"definitions are not valid JSON: {error}") from None
    if not isinstance(document, Mapping):
        raise DefinitionsError("definitions must be a JSON object")
    topology = Topology()
    for item in _items(document, "vhosts"):
        topology.vhost(_text(item, "name", "vhosts"))
    if not document.get("vhosts"):
        topology.vhost(default_vhost)
    for item in _items(document, "exchanges"):
        _declare(topology, item, "exchange", default_vhost, _declare_exchange)
    for item in _items(document, "queues"):
        _declare(topology, item, "queue", default_vhost, _declare_queue)
    for item in _items(document, "bindings"):
        _declare(topology, item, "binding", default_vhost, _declare_binding)
    _apply_policies(topology, _items(document, "policies"), default_vhost)
    return topology


def _items(document: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = document.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise DefinitionsError(f"definitions: '{key}' must be a list of objects")
    return items


def _text(item: Mapping[str, Any], key: str, what: str, default: str | None = None) -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise DefinitionsError(f"definitions: {what} {_describe(item)} needs a string '{key}'")
    return value


def _args(item: Mapping[str, Any], what: str) -> dict[str, Any]:
    value = item.get("arguments") or {}
    if not isinstance(value, Mapping):
        raise DefinitionsError(f"definitions: {what} {_describe(item)} has non-object 'arguments'")
    return dict(value)


def _describe(item: Mapping[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=str)[:200]


def _declare(
    topology: Topology,
    item: Mapping[str, Any],
    what: str,
    default_vhost: str,
    declare: Callable[[VirtualHost, Mapping[str, Any]], None],
) -> None:
    vhost = topology.vhost(_text(item, "vhost", what, default_vhost))
    try:
        declare(vhost, item)
    except AMQPError as error:
        raise DefinitionsError(f"definitions: {what} {_describe(item)}: {error.reply_text}") from None


def _declare_exchange(vhost: VirtualHost, item: Mapping[str, Any]) -> None:
    vhost.declare_exchange(
        _text(item, "name", "exchange"),
        _text(item, "type", "exchange"),
        durable=bool(item.get("durable", True)),
        auto_delete=bool(item.get("auto_delete", False)),
        internal=bool(item.get("internal", False)),
        arguments=_args(item, "exchange"),
    )


def _declare_queue(vhost: VirtualHost, item: Mapping[str, Any]) -> None:
    vhost.declare_queue(
        _text(item, "name", "queue"),
        owner=None,
        durable=bool(item.get("durable", True)),
        auto_delete=bool(item.get("auto_delete", False)),
        arguments=_args(item, "queue"),
    )


def _declare_binding(vhost: VirtualHost, item: Mapping[str, Any]) -> None:
    source = _text(item, "source", "binding")
    destination = _text(item, "destination", "binding")
    key = _text(item, "routing_key", "binding", "")
    kind = _text(item, "destination_type", "binding", "queue")
    args = _args(item, "binding")
    if kind == "queue":
        vhost.bind_queue(destination, source, key, args, owner=None)
    elif kind == "exchange":
        vhost.bind_exchange(destination, source, key, args)
    else:
        raise DefinitionsError(f"definitions: binding {_describe(item)}: unknown destination_type {kind!r}")


def _apply_policies(topology: Topology, policies: list[Mapping[str, Any]], default_vhost: str) -> None:
    """The ``alternate-exchange`` key of policies applying to exchanges: of the policies whose pattern matches
    an exchange's name, the one with the highest priority applies (rabbit_policy; re:run, so unanchored).
    """
    chosen: dict[tuple[str, str], tuple[int, str | None]] = {}
    for policy in policies:
        vhost = topology.vhost(_text(policy, "vhost", "policy", default_vhost))
        if policy.get("apply-to", "all") not in ("all", "exchanges"):
            continue
        definition = policy.get("definition") or {}
        try:
            pattern = re.compile(_text(policy, "pattern", "policy"))
            priority = int(policy.get("priority", 0))
        except (re.error, TypeError, ValueError) as error:
            raise DefinitionsError(f"definitions: policy {_describe(policy)}: {error}") from None
        alternate = definition.get("alternate-exchange") if isinstance(definition, Mapping) else None
        for name in vhost.exchanges:
            if name and pattern.search(name):
                best = chosen.get((vhost.name, name))
                if best is None or priority > best[0]:
                    chosen[(vhost.name, name)] = (priority, alternate if isinstance(alternate, str) else None)
    for (vhost_name, name), (_, alternate) in chosen.items():
        topology.vhosts[vhost_name].exchanges[name].set_policy_alternate_exchange(alternate)
