"""Router on random topologies (E2E cycles, alternate exchanges) equals a naive reachability reference."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.core.exchanges.bindings import BindingTable
from broker.core.exchanges.exchange import Exchange, create_exchange
from broker.core.exchanges.router import Router
from broker.core.model.message import Message
from tests.property.test_topic_trie import naive_match

TYPES = ["direct", "fanout", "topic"]
KEY_WORDS = ["a", "b", "*", "#"]
ROUTING_KEYS = ["a", "b", "a.b", ""]


@dataclass(frozen=True)
class Spec:
    types: list[str]
    alternates: list[int | None]  # index of the AE (may be out of range: a missing exchange), or None
    bindings: list[tuple[int, bool, int, str]]  # (source, to_exchange?, destination index, binding key)
    queues: int


@st.composite
def topologies(draw: st.DrawFn) -> Spec:
    count = draw(st.integers(1, 6))
    queues = draw(st.integers(0, 5))
    types = draw(st.lists(st.sampled_from(TYPES), min_size=count, max_size=count))
    alternates = draw(st.lists(st.one_of(st.none(), st.integers(0, count)), min_size=count, max_size=count))
    key = st.lists(st.sampled_from(KEY_WORDS), min_size=1, max_size=2).map(".".join)
    binding = st.tuples(
        st.integers(0, count - 1), st.booleans(), st.integers(0, max(count, queues) - 1), key
    ).filter(lambda b: b[2] < (count if b[1] else queues))
    bindings = draw(st.lists(binding, max_size=14)) if queues or count > 1 else []
    return Spec(types, alternates, bindings, queues)


def binding_matches(type_name: str, binding_key: str, routing_key: str) -> bool:
    if type_name == "fanout":
        return True
    if type_name == "direct":
        return binding_key == routing_key
    return naive_match(binding_key, routing_key)


def reference(spec: Spec, start: int, routing_key: str) -> set[str]:
    """Reachability over: matching bindings, plus X -> AE(X) when X's own bindings match nothing."""
    reached: set[str] = set()
    seen, stack = {start}, [start]
    while stack:
        x = stack.pop()
        edges = [
            (to_x, d)
            for s, to_x, d, k in spec.bindings
            if s == x and binding_matches(spec.types[x], k, routing_key)
        ]
        if not edges:
            ae = spec.alternates[x]
            if ae is not None and ae < len(spec.types) and ae not in seen:
                seen.add(ae)
                stack.append(ae)
        for to_exchange, d in edges:
            if not to_exchange:
                reached.add(f"q{d}")
            elif d not in seen:
                seen.add(d)
                stack.append(d)
    return reached


@given(topologies(), st.sampled_from(ROUTING_KEYS), st.data())
@settings(max_examples=400)
def test_router_reaches_each_queue_once_as_reachability_says(
    spec: Spec, routing_key: str, data: st.DataObject
) -> None:
    exchanges: dict[str, Exchange] = {}
    for i, type_name in enumerate(spec.types):
        ae = spec.alternates[i]
        arguments = None if ae is None else {"alternate-exchange": f"x{ae}"}  # x{count} does not exist
        exchanges[f"x{i}"] = create_exchange(f"x{i}", type_name, arguments=arguments)
    table = BindingTable()
    for source, to_exchange, d, key in spec.bindings:
        destination: object = exchanges[f"x{d}"] if to_exchange else f"q{d}"
        table.add(exchanges[f"x{source}"], destination, key)
    router = Router(exchanges.get)
    start = data.draw(st.integers(0, len(spec.types) - 1))
    routed = router.route(exchanges[f"x{start}"], Message(f"x{start}", routing_key, b"", b""))
    assert len(routed) == len(set(routed))
    assert set(routed) == reference(spec, start, routing_key)
    # The management UI's dry run walks the same way: the same queues, and every hop is an edge the
    # reference allows (a matching binding, or an alternate exchange taken because nothing matched).
    message = Message(f"x{start}", routing_key, b"", b"")
    queues, hops = router.trace(exchanges[f"x{start}"], message)
    assert set(queues) == set(routed)
    assert len(queues) == len(routed)
    names = {exchange: name for name, exchange in exchanges.items()}
    for hop_source, destination, alternate in hops:
        index = int(names[hop_source][1:])
        if alternate:
            assert isinstance(destination, Exchange)
            assert names[destination] == f"x{spec.alternates[index]}"
        else:
            target = names[destination] if isinstance(destination, Exchange) else destination
            assert any(
                s == index
                and (f"x{d}" if to_x else f"q{d}") == target
                and binding_matches(spec.types[index], k, routing_key)
                for s, to_x, d, k in spec.bindings
            )
    reached_by_hops = {destination for _, destination, _ in hops if not isinstance(destination, Exchange)}
    assert reached_by_hops == set(routed)
