"""x-random: one bound destination per message, picked at random; routing keys ignored; bindings weigh."""

from __future__ import annotations

from collections import Counter

from broker.core.exchanges.x_random import RandomExchangeType
from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.model.names import NameGenerator
from broker.core.topology.vhost import VirtualHost


def _vhost_with(queues: int) -> VirtualHost:
    vhost = VirtualHost("/", Dispatcher(lambda callback: None), NameGenerator(1))
    vhost.declare_exchange("rnd", "x-random")
    for q in range(queues):
        vhost.declare_queue(f"q{q}", owner=None)
        vhost.bind_queue(f"q{q}", "rnd", f"key-{q}", None, None)
    kind = vhost.exchanges["rnd"].kind
    assert isinstance(kind, RandomExchangeType)
    kind.rng.seed(7)
    return vhost


def test_each_message_reaches_exactly_one_queue_whatever_its_routing_key() -> None:
    vhost = _vhost_with(3)
    for i in range(300):
        assert len(vhost.publish("rnd", Message("rnd", f"unrelated-{i}", b"", b""))[0]) == 1
    counts = [vhost.queues[f"q{q}"].message_count for q in range(3)]
    assert sum(counts) == 300
    assert min(counts) > 60, counts  # every queue gets a share (uniform: ~100 each)


def test_a_queue_bound_twice_is_picked_twice_as_often() -> None:
    vhost = _vhost_with(2)
    vhost.bind_queue("q0", "rnd", "another-key", None, None)
    picks = Counter(vhost.publish("rnd", Message("rnd", "", b"", b""))[0][0].name for _ in range(3000))
    assert 1.6 < picks["q0"] / picks["q1"] < 2.5


def test_unbinding_removes_one_weight_and_an_empty_exchange_routes_nowhere() -> None:
    vhost = _vhost_with(1)
    vhost.unbind_queue("q0", "rnd", "key-0", None, None)
    assert vhost.publish("rnd", Message("rnd", "", b"", b""))[0] == []
