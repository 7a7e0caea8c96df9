"""pika's callback-style SelectConnection: the event order it observes (return before ack, close reasons)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions

from .conftest import make_pika_params

TIMEOUT_S = 5.0


def run_select(
    amqp_params: dict[str, Any], on_channel: Callable[[Any, Any, Callable[[], None]], None]
) -> None:
    """Open a SelectConnection and a channel, call ``on_channel(connection, channel, done)``, run the ioloop
    until ``done()`` is called; fail if that takes longer than TIMEOUT_S."""
    state: dict[str, Any] = {"timed_out": False, "error": None}

    def done() -> None:
        if connection.is_open:
            connection.close()
        else:
            connection.ioloop.stop()

    def on_open(conn: Any) -> None:
        conn.channel(on_open_callback=lambda ch: on_channel(conn, ch, done))

    def on_open_error(_conn: Any, error: Exception) -> None:
        state["error"] = error
        connection.ioloop.stop()

    def on_closed(_conn: Any, _reason: Exception) -> None:
        connection.ioloop.stop()

    def on_timeout() -> None:
        state["timed_out"] = True
        done()

    connection = pika.SelectConnection(
        make_pika_params(amqp_params),
        on_open_callback=on_open,
        on_open_error_callback=on_open_error,
        on_close_callback=on_closed,
    )
    connection.ioloop.call_later(TIMEOUT_S, on_timeout)
    connection.ioloop.start()
    assert state["error"] is None, state["error"]
    assert not state["timed_out"], "the scenario did not finish in time"


def test_publish_and_consume(amqp_params: dict[str, Any]) -> None:
    received: list[bytes] = []

    def scenario(_conn: Any, ch: Any, done: Callable[[], None]) -> None:
        def on_message(channel: Any, method: Any, _props: Any, body: bytes) -> None:
            received.append(body)
            channel.basic_ack(method.delivery_tag)
            if len(received) == 3:
                done()

        def on_declared(frame: Any) -> None:
            queue = frame.method.queue
            ch.basic_consume(queue, on_message)
            for i in range(3):
                ch.basic_publish("", queue, f"m{i}".encode())

        ch.queue_declare("", exclusive=True, callback=on_declared)

    run_select(amqp_params, scenario)
    assert received == [b"m0", b"m1", b"m2"]


def test_mandatory_return_comes_before_the_publisher_ack(amqp_params: dict[str, Any], unique: str) -> None:
    events: list[str] = []

    def scenario(_conn: Any, ch: Any, done: Callable[[], None]) -> None:
        def on_return(_ch: Any, method: Any, _props: Any, _body: bytes) -> None:
            events.append(f"return {method.reply_code} {method.reply_text}")

        def on_confirm(frame: Any) -> None:
            events.append(f"{type(frame.method).__name__.lower()} {frame.method.delivery_tag}")
            done()

        def on_select_ok(_frame: Any) -> None:
            ch.basic_publish("amq.direct", f"{unique}-nobody", b"x", mandatory=True)

        ch.add_on_return_callback(on_return)
        ch.confirm_delivery(ack_nack_callback=on_confirm, callback=on_select_ok)

    run_select(amqp_params, scenario)
    assert events == ["return 312 NO_ROUTE", "ack 1"]


def test_channel_close_reason_is_reported(amqp_params: dict[str, Any], unique: str) -> None:
    reasons: list[Exception] = []

    def scenario(_conn: Any, ch: Any, done: Callable[[], None]) -> None:
        def on_close(_ch: Any, reason: Exception) -> None:
            reasons.append(reason)
            done()

        ch.add_on_close_callback(on_close)
        ch.exchange_declare(f"{unique}-missing", passive=True)

    run_select(amqp_params, scenario)
    [reason] = reasons
    assert isinstance(reason, pika.exceptions.ChannelClosedByBroker)
    assert (reason.reply_code, reason.reply_text) == (
        404,
        f"NOT_FOUND - no exchange '{unique}-missing' in vhost '/'",
    )


def test_connection_open_error_for_unknown_vhost(amqp_params: dict[str, Any]) -> None:
    errors: list[Exception] = []

    def on_open_error(conn: Any, error: Exception) -> None:
        errors.append(error)
        conn.ioloop.stop()

    connection = pika.SelectConnection(
        make_pika_params({**amqp_params, "vhost": "nope"}),
        on_open_error_callback=on_open_error,
        on_open_callback=lambda conn: conn.close(),
    )
    connection.ioloop.call_later(TIMEOUT_S, connection.ioloop.stop)
    connection.ioloop.start()
    [error] = errors
    assert isinstance(error, pika.exceptions.ProbableAccessDeniedError)
    assert str(error) == "ConnectionClosedByBroker: (530) 'NOT_ALLOWED - vhost nope not found'"
