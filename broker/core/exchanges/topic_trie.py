"""A word trie matching AMQP topic routing keys against binding patterns with ``*`` and ``#`` wildcards.

Semantics follow rabbit_db_topic_exchange (RabbitMQ 3.13/4.x, unchanged since the 2.x trie):

- Keys and patterns split on every ``.``; empty words are words: ``"a..b"`` has 3 words, ``"a."`` 2,
  ``"."`` 2. The empty key ``""`` has NO words (split_topic_key(<<>>) -> []), so pattern ``""`` matches
  only key ``""``, and ``#`` matches ``""``.
- ``*`` matches exactly one word (an empty word too), ``#`` zero or more. Consecutive ``#`` are collapsed at
  insert time (``#.#`` is ``#``); RabbitMQ keeps them, with the same matches.
- Routing-key words are literals, even ``*`` and ``#``.

Matching advances a frontier of trie nodes one key word at a time. With ``#`` nodes present the frontier is
a set, so the work is bounded by (trie nodes x key words) whatever the patterns: runs of ``#`` cannot make it
combinatorial (the CVE-2026-67419 class of problem in RabbitMQ's recursive matcher). Cost is independent of
the number of bindings that do not share a prefix with the key.
"""

from __future__ import annotations

from collections.abc import Hashable


class _Node:
    __slots__ = ("bindings", "children", "destinations", "hash", "is_hash", "star")

    def __init__(self, is_hash: bool = False) -> None:
        self.children: dict[str, _Node] | None = None  # literal words, created on first use
        self.star: _Node | None = None
        self.hash: _Node | None = None
        self.is_hash = is_hash  # reached through a '#' edge: absorbs any number of words
        self.bindings: dict[object, set[Hashable]] | None = None  # destination -> binding ids ending here
        self.destinations: tuple[object, ...] = ()  # keys of `bindings`, ready for the hot path

    def child(self, word: str) -> _Node | None:
        if word == "*":
            return self.star
        if word == "#":
            return self.hash
        return None if self.children is None else self.children.get(word)

    def is_empty(self) -> bool:
        return not self.bindings and not self.children and self.star is None and self.hash is None


def split_pattern(pattern: str) -> list[str]:
    """The words of a binding pattern, with runs of ``#`` collapsed to one."""
    if not pattern:
        return []
    words: list[str] = []
    for word in pattern.split("."):
        if word == "#" and words and words[-1] == "#":
            continue
        words.append(word)
    return words


class TopicTrie:
    """Patterns to destinations. A (pattern, destination, binding_id) triple is one entry; the same
    destination may sit under several patterns, or several times under one node with different binding ids
    (``#.#`` and ``#`` share a node), and stays matched until its last entry there is removed."""

    __slots__ = ("_hash_nodes", "_root", "_size")

    def __init__(self) -> None:
        self._root = _Node()
        self._hash_nodes = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, pattern: str, destination: object, binding_id: Hashable) -> None:
        node = self._root
        for word in split_pattern(pattern):
            nxt = node.child(word)
            if nxt is None:
                nxt = self._attach(node, word)
            node = nxt
        if node.bindings is None:
            node.bindings = {}
        ids = node.bindings.get(destination)
        if ids is None:
            node.bindings[destination] = {binding_id}
            node.destinations = (*node.destinations, destination)
        elif binding_id not in ids:
            ids.add(binding_id)
        else:
            return
        self._size += 1

    def remove(self, pattern: str, destination: object, binding_id: Hashable) -> None:
        """Remove one entry and prune the nodes it leaves empty; an unknown entry is ignored."""
        words = split_pattern(pattern)
        path = [self._root]
        for word in words:
            nxt = path[-1].child(word)
            if nxt is None:
                return
            path.append(nxt)
        node = path[-1]
        ids = None if node.bindings is None else node.bindings.get(destination)
        if ids is None or binding_id not in ids:
            return
        ids.discard(binding_id)
        self._size -= 1
        if not ids:
            assert node.bindings is not None
            del node.bindings[destination]
            node.destinations = tuple(node.bindings)
        for depth in range(len(words), 0, -1):
            node = path[depth]
            if not node.is_empty():
                break
            self._detach(path[depth - 1], words[depth - 1], node)

    def node_count(self) -> int:
        """Nodes in the trie, root included (tests check that removal prunes)."""
        count, stack = 0, [self._root]
        while stack:
            node = stack.pop()
            count += 1
            if node.children:
                stack.extend(node.children.values())
            stack.extend(n for n in (node.star, node.hash) if n is not None)
        return count

    def match(self, routing_key: str) -> list[object]:
        """Destinations of every pattern matching ``routing_key``; one per matching entry node, so a
        destination under two matching patterns appears twice (RabbitMQ's match also returns duplicates)."""
        words = routing_key.split(".") if routing_key else ()
        if self._hash_nodes:
            return self._match_with_hash(words)
        frontier = [self._root]
        for word in words:
            nxt = []
            for node in frontier:
                children = node.children
                if children is not None:
                    child = children.get(word)
                    if child is not None:
                        nxt.append(child)
                if node.star is not None:
                    nxt.append(node.star)
            if not nxt:
                return []
            frontier = nxt
        out: list[object] = []
        for node in frontier:
            if node.destinations:
                out.extend(node.destinations)
        return out

    def _match_with_hash(self, words: list[str] | tuple[str, ...]) -> list[object]:
        # A dict is the frontier's ordered set: a node reached by several paths is expanded once per word.
        root = self._root
        frontier: dict[_Node, None] = {root: None}
        if root.hash is not None:
            frontier[root.hash] = None  # '#' matches zero words
        for word in words:
            nxt: dict[_Node, None] = {}
            for node in frontier:
                if node.is_hash:
                    nxt[node] = None  # '#' absorbs this word and may absorb more
                children = node.children
                if children is not None:
                    child = children.get(word)
                    if child is not None:
                        nxt[child] = None
                        if child.hash is not None:
                            nxt[child.hash] = None
                star = node.star
                if star is not None:
                    nxt[star] = None
                    if star.hash is not None:
                        nxt[star.hash] = None
            if not nxt:
                return []
            frontier = nxt
        out: list[object] = []
        for node in frontier:
            if node.destinations:
                out.extend(node.destinations)
        return out

    def _attach(self, parent: _Node, word: str) -> _Node:
        if word == "*":
            node = parent.star = _Node()
        elif word == "#":
            node = parent.hash = _Node(is_hash=True)
            self._hash_nodes += 1
        else:
            if parent.children is None:
                parent.children = {}
            node = parent.children[word] = _Node()
        return node

    def _detach(self, parent: _Node, word: str, node: _Node) -> None:
        if word == "*":
            parent.star = None
        elif word == "#":
            parent.hash = None
            self._hash_nodes -= 1
        else:
            assert parent.children is not None
            del parent.children[word]
            if not parent.children:
                parent.children = None
