"""The `Router`: the queues a message published to one exchange reaches, through E2E bindings and AEs."""

from __future__ import annotations

from collections.abc import Callable

from broker.core.exchanges.exchange import Exchange
from broker.core.model.message import Message


class Router:
    """Routes a message the way rabbit_exchange:route/3 does (route1/4 with process_alternate/2):

    - Every exchange reached is routed once through its own type; destinations that are exchanges (E2E
      bindings, docs/e2e.md) are routed in turn. A visited set ends cycles, and each queue is returned once
      ("each queue will receive exactly one copy of that message").
    - An exchange whose OWN bindings select nothing hands the message to its alternate exchange, looked up
      by name; a missing AE is skipped (RabbitMQ logs a warning). This applies to every exchange in the walk:
      the exchange published to, exchanges reached through E2E bindings, and AEs themselves (AE chains,
      docs/ae.md). An exchange that routes only to exchanges which route nothing has routed something: its
      AE is not used. An AE already visited is skipped, so AE loops end. An AE named "" (the default
      exchange) routes nothing, as in RabbitMQ, where the default exchange's queue-name routing applies only
      to publishes made to it. (All of this checked against RabbitMQ 3.10.8.)

    The common case (no E2E binding from the exchange, something matched) is one ``kind.route`` call and a
    copy of its result, plus a dedup for types that may repeat a destination (headers).
    """

    __slots__ = ("_lookup_exchange",)

    def __init__(self, lookup_exchange: Callable[[str], Exchange | None]) -> None:
        self._lookup_exchange = lookup_exchange

    def route(self, exchange: Exchange, message: Message) -> list[object]:
        """The queues ``message`` reaches from ``exchange``, each once, in discovery order; [] if none."""
        kind = exchange.kind
        destinations = kind.route(message)
        if exchange.e2e_bindings == 0:
            if type(destinations) is not tuple and type(destinations) is not list:
                destinations = list(destinations)
            if destinations:
                if kind.unique_destinations or len(destinations) == 1:
                    return list(destinations)
                return list(dict.fromkeys(destinations))
            if exchange.alternate_exchange is None:
                return []
        return self._walk(exchange, message, list(destinations))

    def trace(
        self, exchange: Exchange, message: Message
    ) -> tuple[list[object], list[tuple[Exchange, object, bool]]]:
        """A dry run for the management UI's "route a test key": the queues ``route`` reaches and every hop
        of the walk as (exchange, destination, whether the destination is the alternate exchange taken), a
        destination being a queue or an exchange. Enqueues nothing."""
        hops: list[tuple[Exchange, object, bool]] = []
        queues = self._walk(exchange, message, list(exchange.kind.route(message)), hops)
        return queues, hops

    def _walk(
        self,
        start: Exchange,
        message: Message,
        first: list[object],
        hops: list[tuple[Exchange, object, bool]] | None = None,
    ) -> list[object]:
        queues: dict[object, None] = {}
        seen: set[Exchange] = {start}
        pending: list[Exchange] = [start]
        lookup = self._lookup_exchange
        index = 0
        while index < len(pending):
            exchange = pending[index]
            destinations = first if index == 0 else list(exchange.kind.route(message))
            index += 1
            if not destinations:
                name = exchange.alternate_exchange
                if name:
                    alternate = lookup(name)
                    if alternate is not None and alternate not in seen and not alternate.is_default:
                        seen.add(alternate)
                        pending.append(alternate)
                        if hops is not None:
                            hops.append((exchange, alternate, True))
                continue
            for destination in destinations:
                if hops is not None:
                    hops.append((exchange, destination, False))
                if isinstance(destination, Exchange):
                    if destination not in seen:
                        seen.add(destination)
                        pending.append(destination)
                else:
                    queues[destination] = None
        return list(queues)
