"""The ``x-recent-history`` exchange type (rabbitmq_recent_history_exchange).

As rabbit_exchange_type_recent_history (3.10 to 4.x): every message routed through the exchange goes to all
its bindings (routing keys ignored) and is kept in the exchange's history, the newest
``x-recent-history-length`` of them (default 20), unless its ``x-recent-history-no-store`` header is
boolean true. Each new binding first receives the history: a queue gets it enqueued oldest first, a bound
exchange routes each message on newest first (the plugin reverses the cache for queues only). The history
is in memory and goes with the exchange. Checked against RabbitMQ 3.10.8
(tests/compat/test_plugin_exchanges.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, cast

from broker.core.model.arguments import erlang_term
from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode

LENGTH = "x-recent-history-length"
NO_STORE = "x-recent-history-no-store"
DEFAULT_LENGTH = 20  # the plugin's KEEP_NB


class _Queue(Protocol):
    def enqueue(self, message: Message) -> bool: ...


class _Routes(Protocol):
    def route(self, exchange: Any, message: Message) -> list[object]: ...


class HistoryHost(Protocol):
    """The vhost, as the type sees it: a router to replay the history through a bound exchange."""

    @property
    def router(self) -> _Routes: ...


class RecentHistoryExchangeType:
    type_name: ClassVar[str] = "x-recent-history"
    unique_destinations: ClassVar[bool] = False  # a destination bound under two keys is listed twice

    __slots__ = ("_destinations", "_history", "_host", "length")

    def __init__(self) -> None:
        self._destinations: list[object] = []
        self._history: list[Message] = []  # newest first, as the plugin's cache
        self._host: HistoryHost | None = None
        self.length = DEFAULT_LENGTH

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        if LENGTH not in arguments:
            return
        value = arguments[LENGTH]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f"Invalid argument {erlang_term(value)}, '{LENGTH}' must be a positive integer",
            )

    def configure(self, arguments: Mapping[str, Any]) -> None:
        """Called once with the exchange's declare arguments (validated: a positive integer or absent)."""
        self.length = int(arguments.get(LENGTH, DEFAULT_LENGTH))

    def attach(self, host: HistoryHost, exchange_name: str, store: object = None) -> None:
        """Called by the vhost once the exchange exists (``store``: for types that keep messages on disk)."""
        self._host = host

    @property
    def history(self) -> tuple[Message, ...]:
        """The kept messages, oldest first."""
        return tuple(reversed(self._history))

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        if hasattr(destination, "type_name"):  # an exchange: each message routed on from it, newest first
            if self._host is not None:
                for message in self._history:
                    for queue in self._host.router.route(destination, message):
                        cast("_Queue", queue).enqueue(message)
        else:  # a queue: the history enqueued oldest first (deliver_messages reverses the cache)
            queue = cast("_Queue", destination)
            for message in reversed(self._history):
                queue.enqueue(message)
        self._destinations.append(destination)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        try:
            self._destinations.remove(destination)
        except ValueError:
            return

    def route(self, message: Message) -> list[object]:
        headers = message.headers
        if headers is None or headers.get(NO_STORE) is not True:
            self._history.insert(0, message)
            del self._history[self.length :]
        return self._destinations

    def close(self) -> None:
        """The exchange was deleted: its history goes with it."""
        self._history.clear()
