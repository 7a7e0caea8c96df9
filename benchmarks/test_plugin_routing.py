"""Plugin exchange routing microbenchmarks (`make bench`): x-consistent-hash and x-modulus-hash per route.

Distinct keys pay erlang:phash2 and (consistent hash) the exs1024 jump hash; repeated keys hit the per-key
placement cache. Reported by pytest-benchmark, never asserted.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.model.names import NameGenerator
from broker.core.topology.vhost import VirtualHost


def _vhost(kind: str) -> VirtualHost:
    vhost = VirtualHost("/", Dispatcher(lambda callback: None), NameGenerator(1))
    vhost.declare_exchange("x", kind)
    for n, weight in enumerate((1, 2, 3, 5, 8, 13)):
        vhost.declare_queue(f"q{n}", owner=None)
        vhost.bind_queue(f"q{n}", "x", str(weight), None, None)
    return vhost


@pytest.mark.parametrize("kind", ["x-consistent-hash", "x-modulus-hash"])
@pytest.mark.parametrize("distinct", [True, False], ids=["distinct-keys", "repeated-keys"])
def test_hash_exchange_route(benchmark: Any, kind: str, distinct: bool) -> None:
    """Cost per 1,000 routes; distinct keys are new to the placement cache on every round."""
    vhost = _vhost(kind)
    exchange = vhost.exchanges["x"]
    route = vhost.router.route
    rounds = iter(range(10**9))

    def run() -> int:
        tag = next(rounds) if distinct else 0
        return sum(len(route(exchange, Message("x", f"order.{tag}.{n}", b"", b""))) for n in range(1_000))

    assert benchmark(run) == 1_000
