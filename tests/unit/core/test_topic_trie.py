"""TopicTrie: RabbitMQ's topic matching semantics, entry bookkeeping, pruning and bounded matching work."""

from __future__ import annotations

import time

import pytest

from broker.core.exchanges.topic_trie import TopicTrie, split_pattern

PATTERNS = ["", "#", "*", "*.*", "a.*", "a.#", "#.a", "a", "a..b", "a.*.b", "#.#", "a.#.b", ".", "*.", ".*",
            "#.", "a.", "*.#", "#.*"]  # fmt: skip

# Which of PATTERNS match each key, as observed on RabbitMQ 3.10.8 (one queue bound per pattern to a topic
# exchange, one publish per key, then basic.get on every queue).
RABBITMQ_3_10_8 = {
    "": ["", "#", "#.#"],
    "a": ["#", "*", "a.#", "#.a", "a", "#.#", "*.#", "#.*"],
    ".": ["#", "*.*", "#.#", ".", "*.", ".*", "#.", "*.#", "#.*"],
    "a.": ["#", "*.*", "a.*", "a.#", "#.#", "*.", "#.", "a.", "*.#", "#.*"],
    ".a": ["#", "*.*", "#.a", "#.#", ".*", "*.#", "#.*"],
    "a..b": ["#", "a.#", "a..b", "a.*.b", "#.#", "a.#.b", "*.#", "#.*"],
    "a.b": ["#", "*.*", "a.*", "a.#", "#.#", "a.#.b", "*.#", "#.*"],
    "a.x.b": ["#", "a.#", "a.*.b", "#.#", "a.#.b", "*.#", "#.*"],
    "a.b.c": ["#", "a.#", "#.#", "*.#", "#.*"],
    "..": ["#", "#.#", "#.", "*.#", "#.*"],
    "b": ["#", "*", "#.#", "*.#", "#.*"],
    "a.a": ["#", "*.*", "a.*", "a.#", "#.a", "#.#", "*.#", "#.*"],
    "a.b.a": ["#", "a.#", "#.a", "#.#", "*.#", "#.*"],
}


@pytest.fixture
def trie() -> TopicTrie:
    trie = TopicTrie()
    for pattern in PATTERNS:
        trie.add(pattern, pattern, pattern)  # the destination is the pattern itself
    return trie


@pytest.mark.parametrize("key", list(RABBITMQ_3_10_8))
def test_match_equals_what_rabbitmq_routed(trie: TopicTrie, key: str) -> None:
    assert sorted(map(str, trie.match(key))) == sorted(RABBITMQ_3_10_8[key])


def test_empty_key_has_no_words_so_only_empty_pattern_and_hash_match() -> None:
    trie = TopicTrie()
    trie.add("", "q-empty", 1)
    trie.add("*", "q-star", 2)
    trie.add("#", "q-hash", 3)
    assert sorted(map(str, trie.match(""))) == ["q-empty", "q-hash"]


def test_star_matches_an_empty_word_but_not_a_missing_one() -> None:
    trie = TopicTrie()
    trie.add("a.*", "q", 1)
    assert trie.match("a.") == ["q"]
    assert trie.match("a") == []


def test_routing_key_wildcard_characters_are_literal_words() -> None:
    trie = TopicTrie()
    trie.add("a.b", "q", 1)
    assert trie.match("a.*") == []
    assert trie.match("a.#") == []


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("#", ["", "a", "a.b.c", "..."], []),
        ("#.#", ["", "a", "a.b.c"], []),
        ("a.#.b", ["a.b", "a.x.b", "a.x.y.b"], ["a", "b", "a.b.c", "x.a.b"]),
        ("#.b", ["b", "a.b", "a.x.b", ".b"], ["a", "b.a", ""]),
        ("a.#", ["a", "a.b", "a.b.c", "a."], ["", "b.a"]),
        ("#.a.#", ["a", "x.a", "a.x", "x.a.y", "a.a"], ["", "b", "x.y"]),
        ("*.#", ["a", "a.b", "."], [""]),
        ("#.*.#", ["a", "a.b"], [""]),
        ("a.*.#.*", ["a.b.c", "a.b.c.d.e"], ["a.b", "a"]),
    ],
)
def test_hash_matches_zero_or_more_words(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    trie = TopicTrie()
    trie.add(pattern, "q", 1)
    for key in matching:
        assert trie.match(key) == ["q"], key
    for key in not_matching:
        assert trie.match(key) == [], key


def test_consecutive_hashes_collapse() -> None:
    assert split_pattern("#.#.#.a.#.#") == ["#", "a", "#"]
    assert split_pattern("a..b") == ["a", "", "b"]
    assert split_pattern("") == []


def test_a_destination_under_two_matching_patterns_is_returned_twice() -> None:
    trie = TopicTrie()
    trie.add("*.*.rabbit", "Q2", 1)
    trie.add("lazy.#", "Q2", 2)
    assert trie.match("lazy.pink.rabbit") == ["Q2", "Q2"]


def test_hash_and_hash_hash_share_a_node_but_stay_two_entries() -> None:
    trie = TopicTrie()
    trie.add("#", "q", ("#", ()))
    trie.add("#.#", "q", ("#.#", ()))
    assert len(trie) == 2
    trie.remove("#", "q", ("#", ()))
    assert trie.match("x") == ["q"]
    trie.remove("#.#", "q", ("#.#", ()))
    assert trie.match("x") == []


def test_adding_the_same_entry_twice_is_one_entry() -> None:
    trie = TopicTrie()
    trie.add("a", "q", 1)
    trie.add("a", "q", 1)
    assert len(trie) == 1
    trie.remove("a", "q", 1)
    assert trie.match("a") == []


def test_removing_an_unknown_entry_is_ignored() -> None:
    trie = TopicTrie()
    trie.add("a.b", "q", 1)
    trie.remove("a.b", "q", 2)
    trie.remove("a.c", "q", 1)
    trie.remove("a.b", "other", 1)
    assert trie.match("a.b") == ["q"]
    assert len(trie) == 1


def test_remove_prunes_every_node_it_empties() -> None:
    trie = TopicTrie()
    trie.add("a.b.c", "q1", 1)
    trie.add("a.#.d", "q2", 2)
    trie.add("a.*", "q3", 3)
    assert trie.node_count() == 1 + 3 + 2 + 1  # root, a.b.c, #.d, *
    trie.remove("a.b.c", "q1", 1)
    trie.remove("a.#.d", "q2", 2)
    assert trie.node_count() == 3  # root, a, *
    trie.remove("a.*", "q3", 3)
    assert trie.node_count() == 1
    assert len(trie) == 0
    assert trie.match("a.#.d") == []


def test_pruning_keeps_a_prefix_node_that_still_holds_bindings() -> None:
    trie = TopicTrie()
    trie.add("a", "q1", 1)
    trie.add("a.b", "q2", 2)
    trie.remove("a.b", "q2", 2)
    assert trie.match("a") == ["q1"]
    assert trie.node_count() == 2


def test_many_hashes_do_not_make_matching_combinatorial() -> None:
    # Runs and alternations of '#' explode a backtracking matcher on long keys; the frontier is bounded by
    # the trie's nodes, so this stays fast (well under a second, in practice a few milliseconds).
    trie = TopicTrie()
    trie.add(".".join(["#", "a"] * 30) + ".#.b", "q", 1)
    trie.add("#.#.#.#.#.#.#.#.#.#", "all", 2)
    key = ".".join(["a"] * 200)
    started = time.perf_counter()
    result = trie.match(key)
    elapsed = time.perf_counter() - started
    assert result == ["all"]
    assert elapsed < 1.0
