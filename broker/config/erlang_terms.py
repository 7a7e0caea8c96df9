"""A reader for the Erlang terms RabbitMQ takes outside rabbitmq.conf: ``advanced.config``
(``[{rabbit, [{tcp_listeners, [5673]}]}].``) and the ``-rabbit tcp_listeners [5673]`` arguments of
RABBITMQ_SERVER_START_ARGS. Integers, floats, atoms (bare or quoted), strings, binaries, lists and tuples;
what else Erlang has (funs, pids, maps) is refused with its position. Tuples come back as Python tuples,
lists as lists, atoms as ``Atom``, strings and binaries as ``str``."""

from __future__ import annotations

import re
from typing import Any


class Atom(str):
    """An Erlang atom (``port``), told apart from the string ``"port"``."""

    __slots__ = ()


class TermError(ValueError):
    """Text that is not a term this reader takes; the message says where."""


# A pattern string: re compiles it at its first use and caches it, so it never compiles at import.
_TOKEN = r"""\s*(?:
      (?P<comment>%[^\n]*)
    | (?P<float>-?\d+\.\d+(?:[eE][-+]?\d+)?)
    | (?P<int>-?\d+)
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<quoted>'(?:[^'\\]|\\.)*')
    | (?P<atom>[a-z][A-Za-z0-9_@]*)
    | (?P<punct><<|>>|[\[\]{},.])
    )"""


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Reader:
    """Tokens read on demand, so that text after the first term (more ``-app key value`` arguments) is
    never tokenised by ``_one_term``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0
        self._next: tuple[str, str, int, int] | None = None

    def _scan(self) -> tuple[str, str, int, int] | None:
        position = self.position
        while True:
            if self.text[position:].strip() == "":
                return None
            match = re.compile(_TOKEN, re.VERBOSE).match(self.text, position)
            if match is None or match.lastgroup is None:
                raise TermError(f"unexpected {self.text[position:].strip()[:20]!r} at offset {position}")
            if match.lastgroup != "comment":
                kind = match.lastgroup
                return kind, match.group(kind), match.start(kind), match.end()
            position = match.end()

    def peek(self) -> tuple[str, str, int] | None:
        if self._next is None:
            self._next = self._scan()
        return None if self._next is None else self._next[:3]

    def next_text(self) -> str | None:
        """The next token's text, or None at the end."""
        token = self.peek()
        return None if token is None else token[1]

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None or self._next is None:
            raise TermError("unexpected end of input")
        self.position, self._next = self._next[3], None
        return token

    def expect(self, value: str) -> None:
        kind, text, offset = self.take()
        if text != value or kind != "punct":
            raise TermError(f"expected {value!r}, got {text!r} at offset {offset}")

    def term(self) -> Any:
        kind, text, offset = self.take()
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "string":
            return _unescape(text[1:-1])
        if kind in ("atom", "quoted"):
            return Atom(_unescape(text[1:-1]) if kind == "quoted" else text)
        if text == "<<":
            value = self.term() if self.next_text() not in (None, ">>") else ""
            self.expect(">>")
            if not isinstance(value, str):
                raise TermError(f'binary at offset {offset}: only <<"text">> is taken')
            return value
        if text in ("[", "{"):
            close = "]" if text == "[" else "}"
            items: list[Any] = []
            while self.next_text() not in (None, close):
                items.append(self.term())
                if self.next_text() == ",":
                    self.take()
            self.expect(close)
            return items if close == "]" else tuple(items)
        raise TermError(f"unexpected {text!r} at offset {offset}")


def parse_term(text: str) -> Any:
    """One term, optionally ending with ``.`` (advanced.config's form)."""
    reader = _Reader(text)
    value = reader.term()
    if reader.next_text() == ".":
        reader.take()
    if reader.peek() is not None:
        raise TermError(f"unexpected {reader.next_text()!r} after the term")
    return value


def parse_app_args(text: str) -> list[tuple[str, str, Any]]:
    """``-APP KEY VALUE`` triples from erl's command line (RABBITMQ_SERVER_START_ARGS); other erl flags
    (``+P 1000000``, ``-kernel`` triples too) are returned as well, for the caller to apply or warn about.
    A VALUE is one term and may contain spaces (``[{port, 15673}]``)."""
    triples: list[tuple[str, str, Any]] = []
    rest = text.strip()
    while rest:
        match = re.match(r"-([a-z][A-Za-z0-9_]*)\s+([a-z][A-Za-z0-9_]*)\s+", rest)
        if match is None:
            raise TermError(f"expected '-APP KEY VALUE', got {rest[:30]!r}")
        rest = rest[match.end() :]
        value, rest = _one_term(rest)
        triples.append((match.group(1), match.group(2), value))
        rest = rest.strip()
    return triples


def _one_term(text: str) -> tuple[Any, str]:
    """The first term of ``text`` and what follows it."""
    reader = _Reader(text)
    value = reader.term()
    return value, text[reader.position :]
