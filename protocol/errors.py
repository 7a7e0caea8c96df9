"""AMQP reply codes and the typed errors that carry them to the one boundary that turns them into closes.

Pure on purpose (no pamqp, no I/O): it is the error vocabulary shared by every ring, `broker.core` included.
Soft/hard classes follow rabbitmq_codegen's amqp-rabbitmq-0.9.1.json; texts follow rabbit_channel.erl and
rabbit_reader.erl, where RabbitMQ prefixes the code's name: ``NOT_FOUND - no queue 'q' in vhost '/'``.
"""

from __future__ import annotations

from enum import IntEnum


class ReplyCode(IntEnum):
    REPLY_SUCCESS = 200
    CONTENT_TOO_LARGE = 311
    NO_ROUTE = 312
    NO_CONSUMERS = 313
    CONNECTION_FORCED = 320
    INVALID_PATH = 402
    ACCESS_REFUSED = 403
    NOT_FOUND = 404
    RESOURCE_LOCKED = 405
    PRECONDITION_FAILED = 406
    FRAME_ERROR = 501
    SYNTAX_ERROR = 502
    COMMAND_INVALID = 503
    CHANNEL_ERROR = 504
    UNEXPECTED_FRAME = 505
    RESOURCE_ERROR = 506
    NOT_ALLOWED = 530
    NOT_IMPLEMENTED = 540
    INTERNAL_ERROR = 541

    @property
    def is_hard(self) -> bool:
        """Hard errors close the connection; soft ones only the channel (codegen's "hard-error" class)."""
        return self in _HARD


_HARD = frozenset(
    {
        ReplyCode.CONNECTION_FORCED,
        ReplyCode.INVALID_PATH,
        ReplyCode.FRAME_ERROR,
        ReplyCode.SYNTAX_ERROR,
        ReplyCode.COMMAND_INVALID,
        ReplyCode.CHANNEL_ERROR,
        ReplyCode.UNEXPECTED_FRAME,
        ReplyCode.RESOURCE_ERROR,
        ReplyCode.NOT_ALLOWED,
        ReplyCode.NOT_IMPLEMENTED,
        ReplyCode.INTERNAL_ERROR,
    }
)


class AMQPError(Exception):
    """An error with RabbitMQ's reply code and text. ``text`` is the detail; ``reply_text`` adds the name.

    ``class_id``/``method_id`` name the method that failed; the session boundary fills them in when the raiser
    did not know them.
    """

    def __init__(
        self, code: ReplyCode, text: str, class_id: int = 0, method_id: int = 0, *, names_method: bool = True
    ) -> None:
        super().__init__(f"{code.name} - {text}")
        self.code = code
        self.text = text
        self.class_id = class_id
        self.method_id = method_id
        # False for an error RabbitMQ raises with method 'none' (rabbit_reader's channel_max refusal): the
        # boundary leaves its class and method 0 instead of naming the frame that caused it.
        self.names_method = names_method

    @property
    def reply_text(self) -> str:
        # A short string holds 255 bytes: RabbitMQ keeps 252 and appends "..." (rabbit_binary_generator).
        # No detail: a crash inside RabbitMQ answers with the bare name (e.g. 541 "INTERNAL_ERROR").
        text = (f"{self.code.name} - {self.text}" if self.text else self.code.name).encode()
        if len(text) <= 255:
            return text.decode("utf-8", "replace")
        return text[:252].decode("utf-8", "ignore") + "..."


class ChannelError(AMQPError):
    """Closes the channel with channel.close (soft error)."""


class HardError(AMQPError):
    """Closes the whole connection with connection.close (hard error), even when raised inside a channel."""


def amqp_error(code: ReplyCode, text: str) -> AMQPError:
    """The error class RabbitMQ uses for ``code``: a hard code raised in a channel closes the connection."""
    return HardError(code, text) if code.is_hard else ChannelError(code, text)


class FrameError(HardError):
    """Malformed framing (bad frame-end, unknown type, oversized frame): 501 and the connection closes."""

    def __init__(self, text: str) -> None:
        super().__init__(ReplyCode.FRAME_ERROR, text)


class ProtocolHeaderError(Exception):
    """The peer did not send ``AMQP\\x00\\x00\\x09\\x01``: answer with our header and close the socket.
    ``args[1]``, when given, is every octet received so far (from the header on)."""

    @property
    def received(self) -> bytes:
        return bytes(self.args[1]) if len(self.args) > 1 else b""


# Texts clients match on; one place so tests and handlers agree.
def no_exchange(name: str, vhost: str) -> ChannelError:
    return ChannelError(ReplyCode.NOT_FOUND, f"no exchange '{name}' in vhost '{vhost}'")


def internal_exchange(name: str, vhost: str) -> ChannelError:
    return ChannelError(
        ReplyCode.ACCESS_REFUSED, f"cannot publish to internal exchange '{name}' in vhost '{vhost}'"
    )


def no_queue(name: str, vhost: str) -> ChannelError:
    return ChannelError(ReplyCode.NOT_FOUND, f"no queue '{name}' in vhost '{vhost}'")
