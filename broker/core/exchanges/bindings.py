"""The bindings of a vhost: the `Binding` value and the table that keeps exchanges' routing state in step."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from broker.core.exchanges.exchange import Exchange
from broker.core.model.arguments import FrozenTable, freeze_table, thaw_table


class Binding(NamedTuple):
    """source → destination (a queue object or an `Exchange`) under a routing key and arguments.

    Identity is all four fields with the arguments frozen (top-level keys sorted, values typed), as RabbitMQ's
    binding record is: binding twice with equal arguments in another key order is the same binding. A
    NamedTuple (equal and hashed by its fields, as the frozen dataclass it was), because a dataclass's methods
    are compiled at every start.
    """

    source: Exchange
    destination: object
    routing_key: str
    arguments: FrozenTable

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as a plain dict (a fresh copy)."""
        return thaw_table(self.arguments)

    @property
    def is_e2e(self) -> bool:
        return isinstance(self.destination, Exchange)


class BindingTable:
    """All bindings of one vhost, indexed by source and by destination. The only writer of exchanges'
    routing state: ``add``/``remove`` call the source's ``kind.bind``/``kind.unbind`` exactly once per
    distinct binding.

    Existence checks (404 for a missing source or destination, 403 for the default exchange, exclusive-queue
    locks) belong to the caller, which then passes the resolved objects.
    """

    __slots__ = ("_all", "_by_destination", "_by_source")

    def __init__(self) -> None:
        # dicts used as insertion-ordered sets
        self._all: dict[Binding, None] = {}
        self._by_source: dict[Exchange, dict[Binding, None]] = {}
        self._by_destination: dict[object, dict[Binding, None]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Binding]:
        return iter(list(self._all))

    def __contains__(self, binding: object) -> bool:
        return binding in self._all

    def add(
        self,
        source: Exchange,
        destination: object,
        routing_key: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> bool:
        """Create a binding; False if the identical binding exists (RabbitMQ: a repeated bind is a no-op).

        The source's type validates first (e.g. a bad ``x-match`` raises 406), so a rejected binding is not
        added.
        """
        args = arguments or {}
        binding = Binding(source, destination, routing_key, freeze_table(args))
        if binding in self._all:
            return False
        source.kind.bind(destination, routing_key, args)
        self._insert(binding)
        return True

    def remove(
        self,
        source: Exchange,
        destination: object,
        routing_key: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> bool:
        """Delete a binding; False when there is none (RabbitMQ's unbind of a missing binding succeeds)."""
        binding = Binding(source, destination, routing_key, freeze_table(arguments))
        if binding not in self._all:
            return False
        self._delete(binding)
        return True

    def remove_destination(self, destination: object) -> list[Binding]:
        """A queue or exchange was deleted: drop every binding TO it and return them. The caller then applies
        auto-delete to each returned binding's source (see `has_bindings_from`)."""
        removed = list(self._by_destination.get(destination, ()))
        for binding in removed:
            self._delete(binding)
        return removed

    def remove_source(self, source: Exchange) -> list[Binding]:
        """An exchange was deleted: drop every binding FROM it and return them."""
        removed = list(self._by_source.get(source, ()))
        for binding in removed:
            self._delete(binding)
        return removed

    def by_source(self, source: Exchange) -> list[Binding]:
        return list(self._by_source.get(source, ()))

    def by_destination(self, destination: object) -> list[Binding]:
        return list(self._by_destination.get(destination, ()))

    def has_bindings_from(self, source: Exchange) -> bool:
        """Whether ``source`` still routes anywhere: an auto-delete exchange goes when this turns False
        after a binding removal (only bindings where it is the SOURCE count, docs/e2e.md)."""
        return source in self._by_source

    def has_bindings_to(self, destination: object) -> bool:
        return destination in self._by_destination

    def _insert(self, binding: Binding) -> None:
        self._all[binding] = None
        self._by_source.setdefault(binding.source, {})[binding] = None
        self._by_destination.setdefault(binding.destination, {})[binding] = None
        if isinstance(binding.destination, Exchange):
            binding.source.e2e_bindings += 1

    def _delete(self, binding: Binding) -> None:
        source = binding.source
        source.kind.unbind(binding.destination, binding.routing_key, thaw_table(binding.arguments))
        del self._all[binding]
        _discard(self._by_source, source, binding)
        _discard(self._by_destination, binding.destination, binding)
        if isinstance(binding.destination, Exchange):
            source.e2e_bindings -= 1


def _discard(index: dict[Any, dict[Binding, None]], key: object, binding: Binding) -> None:
    bucket = index[key]
    del bucket[binding]
    if not bucket:
        del index[key]
