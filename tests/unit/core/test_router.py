"""Router: E2E walks, alternate exchanges and one copy per queue (behaviour checked on RabbitMQ 3.10.8)."""

from __future__ import annotations

from typing import Any

import pytest

from broker.core.exchanges.bindings import BindingTable
from broker.core.exchanges.exchange import Exchange, create_exchange
from broker.core.exchanges.router import Router
from broker.core.model.message import Message


class Topology:
    """A vhost in miniature: named exchanges, string queues, a binding table and a router."""

    def __init__(self) -> None:
        self.exchanges: dict[str, Exchange] = {}
        self.queues: dict[str, str] = {}
        self.bindings = BindingTable()
        self.exchanges[""] = create_exchange("", "direct", lookup_queue=self.queues.get)
        self.router = Router(self.exchanges.get)

    def exchange(self, name: str, type_name: str = "direct", **arguments: Any) -> Exchange:
        self.exchanges[name] = create_exchange(name, type_name, arguments=arguments or None)
        return self.exchanges[name]

    def queue(self, name: str) -> str:
        self.queues[name] = name
        return name

    def bind(self, source: str, destination: str, key: str = "", **arguments: Any) -> None:
        target = self.exchanges[destination] if destination in self.exchanges else self.queue(destination)
        self.bindings.add(self.exchanges[source], target, key, arguments)

    def publish(self, exchange: str, key: str = "", headers: dict[str, Any] | None = None) -> list[object]:
        return self.router.route(self.exchanges[exchange], Message(exchange, key, b"", b"", headers=headers))


@pytest.fixture
def t() -> Topology:
    return Topology()


def test_plain_exchange_routes_without_walking(t: Topology) -> None:
    t.exchange("x")
    t.bind("x", "q1", "k")
    t.bind("x", "q2", "k")
    assert t.publish("x", "k") == ["q1", "q2"]
    assert t.publish("x", "other") == []


def test_duplicates_from_one_exchange_are_removed(t: Topology) -> None:
    t.exchange("x", "topic")
    t.bind("x", "q", "*.*.rabbit")
    t.bind("x", "q", "lazy.#")
    t.bind("x", "r", "#")
    assert t.publish("x", "lazy.pink.rabbit") == ["q", "r"]


def test_returned_list_is_the_callers(t: Topology) -> None:
    t.exchange("f", "fanout")
    t.bind("f", "q")
    first = t.publish("f")
    first.append("junk")
    assert t.publish("f") == ["q"]


def test_default_exchange_routes_to_the_named_queue(t: Topology) -> None:
    t.queue("q")
    assert t.publish("", "q") == ["q"]
    assert t.publish("", "missing") == []


def test_exchange_to_exchange_chain(t: Topology) -> None:
    t.exchange("a", "fanout")
    t.exchange("b", "topic")
    t.exchange("c", "direct")
    t.bind("a", "b")
    t.bind("b", "c", "logs.#")
    t.bind("c", "q-c", "logs.error")
    t.bind("b", "q-b", "#")
    assert t.publish("a", "logs.error") == ["q-b", "q-c"]
    assert t.publish("a", "logs.info") == ["q-b"]


def test_cycles_end_and_each_queue_gets_one_copy(t: Topology) -> None:
    t.exchange("c1", "fanout")
    t.exchange("c2", "fanout")
    t.bind("c1", "c2")
    t.bind("c2", "c1")
    t.bind("c1", "qc1")
    t.bind("c2", "qc2")
    t.bind("c1", "qc2")
    assert sorted(map(str, t.publish("c1"))) == ["qc1", "qc2"]
    assert sorted(map(str, t.publish("c2"))) == ["qc1", "qc2"]


def test_self_binding_is_harmless(t: Topology) -> None:
    t.exchange("x")
    t.bind("x", "x", "self")
    t.bind("x", "q", "self")
    assert t.publish("x", "self") == ["q"]


def test_diamond_reaches_the_shared_queue_once(t: Topology) -> None:
    for name in ("top", "left", "right"):
        t.exchange(name, "fanout")
    t.bind("top", "left")
    t.bind("top", "right")
    t.bind("left", "shared")
    t.bind("right", "shared")
    t.bind("top", "shared")
    assert t.publish("top") == ["shared"]


def test_alternate_exchange_gets_what_the_exchange_cannot_route(t: Topology) -> None:
    t.exchange("my-direct", "direct", **{"alternate-exchange": "my-ae"})
    t.exchange("my-ae", "fanout")
    t.bind("my-direct", "routed", "key1")
    t.bind("my-ae", "unrouted")
    assert t.publish("my-direct", "key1") == ["routed"]
    assert t.publish("my-direct", "key2") == ["unrouted"]


def test_alternate_exchange_of_an_exchange_reached_by_e2e_is_used(t: Topology) -> None:
    # src routes to mid; mid's own bindings match nothing, so mid's AE takes it (3.10.8: delivered).
    t.exchange("src")
    t.exchange("mid", **{"alternate-exchange": "ae1"})
    t.exchange("ae1", "fanout")
    t.bind("src", "mid", "k")
    t.bind("mid", "qmid", "hit")
    t.bind("ae1", "qae1")
    assert t.publish("src", "k") == ["qae1"]


def test_routing_only_to_an_exchange_that_routes_nothing_does_not_use_the_ae(t: Topology) -> None:
    t.exchange("src2", **{"alternate-exchange": "ae2"})
    t.exchange("ae2", "fanout")
    t.exchange("empty")
    t.bind("src2", "empty", "k")
    t.bind("ae2", "qae2")
    assert t.publish("src2", "k") == []
    assert t.publish("src2", "zzz") == ["qae2"]


def test_alternate_exchange_chains_are_followed(t: Topology) -> None:
    t.exchange("ch1", **{"alternate-exchange": "ch2"})
    t.exchange("ch2", **{"alternate-exchange": "ch3"})
    t.exchange("ch3", "fanout")
    t.bind("ch3", "qch3")
    assert t.publish("ch1", "x") == ["qch3"]


def test_alternate_exchange_loops_end(t: Topology) -> None:
    t.exchange("l1", **{"alternate-exchange": "l2"})
    t.exchange("l2", **{"alternate-exchange": "l1"})
    assert t.publish("l1", "x") == []
    t.bind("l2", "ql", "y")
    assert t.publish("l1", "y") == ["ql"]


def test_alternate_exchange_pointing_to_itself_ends(t: Topology) -> None:
    t.exchange("selfish", **{"alternate-exchange": "selfish"})
    assert t.publish("selfish", "x") == []


def test_missing_alternate_exchange_routes_nothing(t: Topology) -> None:
    t.exchange("missae", **{"alternate-exchange": "does-not-exist"})
    assert t.publish("missae", "x") == []


def test_alternate_exchange_named_empty_string_routes_nothing(t: Topology) -> None:
    # The default exchange routes by queue name only for publishes made to it (3.10.8: not delivered).
    t.exchange("aeempty", **{"alternate-exchange": ""})
    t.queue("qname")
    assert t.publish("aeempty", "qname") == []


def test_alternate_exchange_already_visited_through_e2e_is_skipped(t: Topology) -> None:
    t.exchange("a", "fanout")
    t.exchange("b", **{"alternate-exchange": "c"})
    t.exchange("c", "fanout")
    t.bind("a", "b")
    t.bind("a", "c")
    t.bind("c", "qc")
    assert t.publish("a") == ["qc"]


def test_ae_routes_through_its_own_e2e_bindings(t: Topology) -> None:
    t.exchange("x", **{"alternate-exchange": "ae"})
    t.exchange("ae", "fanout")
    t.exchange("sink", "topic")
    t.bind("ae", "sink")
    t.bind("sink", "q", "#")
    assert t.publish("x", "nothing.bound") == ["q"]


def test_policy_alternate_exchange_is_used(t: Topology) -> None:
    x = t.exchange("x")
    t.exchange("ae", "fanout")
    t.bind("ae", "q")
    x.set_policy_alternate_exchange("ae")
    assert t.publish("x", "k") == ["q"]


def test_unbinding_e2e_returns_to_the_fast_path(t: Topology) -> None:
    x = t.exchange("x", "fanout")
    y = t.exchange("y", "fanout")
    t.bind("x", "y")
    t.bind("y", "q")
    assert x.e2e_bindings == 1
    assert t.publish("x") == ["q"]
    t.bindings.remove(x, y, "")
    assert x.e2e_bindings == 0
    assert t.publish("x") == []
