"""Publisher confirms and transactions (confirm.select, tx.select / commit / rollback)."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions

from .kit import Ctx, Observation, confirming_queue, drain, outcome, scenario


@scenario
def transactions(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection)
    observer = connection.channel()

    def ready() -> int:
        count: int = observer.queue_declare(q, passive=True).method.message_count
        return count

    tx = connection.channel()
    tx.tx_select()
    tx.basic_publish("", q, b"t1")
    tx.basic_publish("", q, b"t2")
    results: dict[str, Any] = {"before-commit": ready()}
    tx.tx_commit()
    results["after-commit"] = ready()
    tx.basic_publish("", q, b"rolled-back")
    tx.tx_rollback()
    results["after-rollback"] = ready()
    method, _p, _b = tx.basic_get(q)
    tx.basic_ack(method.delivery_tag)
    tx.tx_rollback()
    results["ack-rolled-back"] = ready()
    tx.basic_ack(method.delivery_tag)
    tx.tx_commit()
    tx.close()
    results["remaining"] = drain(ch, q)
    results["commit-without-select"] = outcome(lambda: connection.channel().tx_commit())
    results["rollback-without-select"] = outcome(lambda: connection.channel().tx_rollback())

    def tx_then_confirm() -> None:
        c = connection.channel()
        c.tx_select()
        c.confirm_delivery()

    def confirm_then_tx() -> None:
        c = connection.channel()
        c.confirm_delivery()
        c.tx_select()

    results["tx-then-confirm"] = outcome(tx_then_confirm)
    results["confirm-then-tx"] = outcome(confirm_then_tx)
    return results


@scenario
def confirms_with_returns(ctx: Ctx) -> Observation:
    events: list[str] = []
    confirmed: list[int] = []

    def on_open(conn: Any) -> None:
        conn.channel(on_open_callback=on_channel)

    def on_channel(ch: Any) -> None:
        ch.add_on_return_callback(lambda _c, m, _p, b: events.append(f"return {m.reply_code} {b.decode()}"))

        def on_confirm(frame: Any) -> None:
            # A broker may coalesce acks (multiple=true); expand them to the tags they cover.
            method = frame.method
            first = (confirmed[-1] + 1 if confirmed else 1) if method.multiple else method.delivery_tag
            for tag in range(first, method.delivery_tag + 1):
                confirmed.append(tag)
                events.append(f"{type(method).__name__} {tag}")
            if confirmed and confirmed[-1] >= 3:
                ch.connection.close()

        def on_selected(_frame: Any) -> None:
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m1", mandatory=True)
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m2")
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m3", mandatory=True)

        ch.confirm_delivery(ack_nack_callback=on_confirm, callback=on_selected)

    connection = pika.SelectConnection(
        ctx.params(), on_open_callback=on_open, on_close_callback=lambda c, _r: c.ioloop.stop()
    )
    connection.ioloop.call_later(5, connection.ioloop.stop)
    connection.ioloop.start()
    # Each message's return comes before its own ack; acks cover every tag once, in order. How acks interleave
    # with other messages' returns (and whether they are coalesced) is the broker's choice, so not compared.
    return {
        "returns": [event for event in events if event.startswith("return")],
        "return-before-ack": [
            events.index(f"return 312 m{n}") < events.index(f"Ack {n}")
            for n in (1, 3)
            if f"Ack {n}" in events
        ],
        "confirmed": confirmed,
    }
