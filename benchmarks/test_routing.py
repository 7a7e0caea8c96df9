"""Routing-core microbenchmarks (`make bench`): cost per route, independent of sockets and the event loop.

Not part of `make test`: timings are reported by pytest-benchmark, never asserted.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.model.names import NameGenerator
from broker.core.topology.vhost import VirtualHost

VOCAB = [f"w{i}" for i in range(32)]


def _vhost() -> VirtualHost:
    return VirtualHost("/", Dispatcher(lambda callback: None), NameGenerator(1))


def _pattern(rng: random.Random) -> str:
    return ".".join(
        rng.choices([rng.choice(VOCAB), "*", "#"], weights=[70, 20, 10])[0] for _ in range(rng.randint(2, 5))
    )


def _topic_vhost(bindings: int, queues: int = 10) -> VirtualHost:
    rng = random.Random(42)
    vhost = _vhost()
    vhost.declare_exchange("t", "topic")
    for q in range(queues):
        vhost.declare_queue(f"q{q}", owner=None)
    for _ in range(bindings):
        vhost.bind_queue(f"q{rng.randrange(queues)}", "t", _pattern(rng), None, None)
    return vhost


def _keys(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [".".join(rng.choice(VOCAB) for _ in range(rng.randint(2, 5))) for _ in range(count)]


def _route_all(vhost: VirtualHost, exchange: str, messages: list[Message]) -> int:
    exchange_obj = vhost.exchanges[exchange]
    route = vhost.router.route
    return sum(len(route(exchange_obj, message)) for message in messages)


@pytest.mark.parametrize("bindings", [10_000, 100_000])
def test_topic_route_distinct_keys(benchmark: Any, bindings: int) -> None:
    """Every key new to the route cache: the trie walk itself (cost per 1,000 routes)."""
    vhost = _topic_vhost(bindings)
    messages = [Message("t", key, b"", b"") for key in _keys(1_000)]

    def run() -> int:
        vhost.exchanges["t"].kind.bind(object(), "cache.buster", {})  # binding changes clear the cache
        return _route_all(vhost, "t", messages)

    assert benchmark(run) > 0


def test_topic_route_cached_keys(benchmark: Any) -> None:
    vhost = _topic_vhost(10_000)
    messages = [Message("t", key, b"", b"") for key in _keys(100)] * 10
    _route_all(vhost, "t", messages)
    assert benchmark(_route_all, vhost, "t", messages) > 0


def test_topic_pathological_hash_runs_stay_bounded(benchmark: Any) -> None:
    """`#.a.#.a.#…` against long keys: memoised (node, word) pairs bound the work (cf. CVE on `#` runs)."""
    vhost = _vhost()
    vhost.declare_exchange("t", "topic")
    vhost.declare_queue("q", owner=None)
    vhost.bind_queue("q", "t", ".".join(["#", "a"] * 20), None, None)
    messages = [Message("t", ".".join(["a"] * 200 + ["b"]), b"", b"")]

    def run() -> int:
        vhost.exchanges["t"].kind.bind(object(), "cache.buster", {})  # defeat the route cache: walk the trie
        return _route_all(vhost, "t", messages)

    benchmark(run)


def test_direct_route(benchmark: Any) -> None:
    vhost = _vhost()
    for q in range(1_000):
        vhost.declare_queue(f"q{q}", owner=None)
        vhost.bind_queue(f"q{q}", "amq.direct", f"k{q}", None, None)
    messages = [Message("amq.direct", f"k{i % 1000}", b"", b"") for i in range(1_000)]
    assert benchmark(_route_all, vhost, "amq.direct", messages) == 1_000


def test_fanout_route_to_ten_queues(benchmark: Any) -> None:
    vhost = _vhost()
    for q in range(10):
        vhost.declare_queue(f"q{q}", owner=None)
        vhost.bind_queue(f"q{q}", "amq.fanout", "", None, None)
    messages = [Message("amq.fanout", "", b"", b"")] * 1_000
    assert benchmark(_route_all, vhost, "amq.fanout", messages) == 10_000


def test_headers_route(benchmark: Any) -> None:
    vhost = _vhost()
    for q in range(10):
        vhost.declare_queue(f"q{q}", owner=None)
        vhost.bind_queue(f"q{q}", "amq.headers", "", {"x-match": "any", "region": f"r{q}", "tier": q}, None)
    messages = [
        Message("amq.headers", "", b"", b"", headers={"region": f"r{i % 10}", "tier": 99})
        for i in range(1_000)
    ]
    assert benchmark(_route_all, vhost, "amq.headers", messages) == 1_000


def test_e2e_graph_with_a_cycle(benchmark: Any) -> None:
    """Three exchanges in a cycle, each with five queues: every queue once per message."""
    vhost = _vhost()
    for name in ("a", "b", "c"):
        vhost.declare_exchange(name, "fanout")
        for q in range(5):
            vhost.declare_queue(f"{name}{q}", owner=None)
            vhost.bind_queue(f"{name}{q}", name, "", None, None)
    vhost.bind_exchange("b", "a", "", None)
    vhost.bind_exchange("c", "b", "", None)
    vhost.bind_exchange("a", "c", "", None)
    messages = [Message("a", "", b"", b"")] * 1_000
    assert benchmark(_route_all, vhost, "a", messages) == 15_000
