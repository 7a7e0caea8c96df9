"""TopicTrie.match equals a naive recursive matcher of RabbitMQ's topic semantics, after adds/removes."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.core.exchanges.topic import TopicExchangeType
from broker.core.exchanges.topic_trie import TopicTrie
from broker.core.model.message import Message

# Small vocabularies so that patterns and keys collide often; "" makes empty words, and keys may contain the
# wildcard characters, which are literals in a routing key.
PATTERN_WORDS = st.sampled_from(["a", "b", "", "*", "#"])
KEY_WORDS = st.sampled_from(["a", "b", "", "c", "*", "#"])
patterns = st.lists(PATTERN_WORDS, max_size=6).map(".".join)
keys = st.lists(KEY_WORDS, max_size=7).map(".".join)
destinations = st.sampled_from(["q0", "q1", "q2", "q3"])


def words(text: str) -> tuple[str, ...]:
    # rabbit_db_topic_exchange:split_topic_key: "" has no words; otherwise split on every dot.
    return tuple(text.split(".")) if text else ()


def naive_match(pattern: str, key: str) -> bool:
    p, k = words(pattern), words(key)

    @cache
    def m(i: int, j: int) -> bool:
        if i == len(p):
            return j == len(k)
        if p[i] == "#":
            return m(i + 1, j) or (j < len(k) and m(i, j + 1))
        if j == len(k):
            return False
        return (p[i] == "*" or p[i] == k[j]) and m(i + 1, j + 1)

    return m(0, 0)


@given(st.lists(st.tuples(patterns, destinations), max_size=25), st.lists(keys, min_size=1, max_size=10))
@settings(max_examples=300)
def test_match_equals_naive_matcher(entries: list[tuple[str, str]], probe_keys: list[str]) -> None:
    trie = TopicTrie()
    for pattern, destination in entries:
        trie.add(pattern, destination, pattern)
    for key in probe_keys:
        matched = trie.match(key)
        expected = {destination for pattern, destination in entries if naive_match(pattern, key)}
        assert set(matched) == expected, key
        # one result per distinct matching trie node: never more than the matching patterns
        for destination in expected:
            distinct = {p for p, d in entries if d == destination and naive_match(p, key)}
            assert 1 <= matched.count(destination) <= len(distinct)


operations = st.lists(st.tuples(st.booleans(), patterns, destinations, st.integers(0, 2)), max_size=60)


@given(operations, st.lists(keys, min_size=1, max_size=8))
@settings(max_examples=300)
def test_random_add_remove_sequences_keep_matching_exact_and_prune(
    ops: list[tuple[bool, str, str, int]], probe_keys: list[str]
) -> None:
    trie = TopicTrie()
    model: set[tuple[str, str, int]] = set()
    for is_add, pattern, destination, binding_id in ops:
        if is_add:
            trie.add(pattern, destination, (pattern, binding_id))
            model.add((pattern, destination, binding_id))
        else:
            trie.remove(pattern, destination, (pattern, binding_id))
            model.discard((pattern, destination, binding_id))
        assert len(trie) == len(model)
    for key in probe_keys:
        expected = {d for p, d, _ in model if naive_match(p, key)}
        assert set(trie.match(key)) == expected, key
    for pattern, destination, binding_id in list(model):
        trie.remove(pattern, destination, (pattern, binding_id))
    assert len(trie) == 0
    assert trie.node_count() == 1
    assert all(trie.match(key) == [] for key in probe_keys)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("bind"), patterns, destinations),
        st.tuples(st.just("unbind"), patterns, destinations),
        st.tuples(st.just("route"), keys, st.just("")),
    ),
    max_size=80,
)


@given(steps)
@settings(max_examples=300)
def test_topic_exchange_with_its_route_cache_tracks_binds_and_unbinds(
    ops: list[tuple[str, str, str]],
) -> None:
    kind = TopicExchangeType()
    bound: set[tuple[str, str]] = set()
    for op, text, destination in ops:
        if op == "bind":
            kind.bind(destination, text, {})
            bound.add((text, destination))
        elif op == "unbind":
            kind.unbind(destination, text, {})
            bound.discard((text, destination))
        else:
            routed = kind.route(Message("t", text, b"", b""))
            assert len(routed) == len(set(routed))
            assert set(routed) == {d for p, d in bound if naive_match(p, text)}
