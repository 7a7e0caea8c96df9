"""RabbitMQ's access-control table on AMQP, row by row, for users that may and users that may not.

Not part of ``SCENARIOS`` (those run as guest on the shared brokers): these need the users of ``DEFINITIONS``
on the broker, which the access-control test loads into each side (rabbitmqctl import_definitions on
RabbitMQ, ``--definitions`` at WarrenMQ's boot). ``observe`` returns what pika saw for every row, so the
two sides can be compared for equality.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pika

from broker.core.access.passwords import hash_password

from .kit import Ctx, Observation, bodies, outcome

PASSWORD = "pw"
# user -> (configure, write, read) on "/"; "stranger" has no permissions at all.
PERMISSIONS: dict[str, tuple[str, str, str]] = {
    "full": (".*", ".*", ".*"),
    "nothing": ("^$", "^$", "^$"),
    # configure and read but no write: the DLX and AE rows refuse on the second check.
    "no-write": (".*", "^$", ".*"),
    # write and read, no configure.
    "no-configure": ("^$", ".*", ".*"),
    # may use what guest set up only through reading (dead-lettering is not checked against it).
    "reader": ("^$", "^$", ".*"),
    # Bunny's read-only consumer (its CI's bunny_reader): patterns that match no name, read on everything.
    "bunny-reader": ("^---$", "^---$", ".*"),
    # write on exchanges whose name ends in "-main" only (alternate and bound exchanges are not checked).
    "main-writer": ("^$", "-main$", "^$"),
    "topic": (".*", ".*", ".*"),
}
USERS = (*PERMISSIONS, "stranger")
# topic permissions on amq.topic: publish keys must start with "a.", binding keys with "r.".
TOPIC = ("topic", "amq.topic", "^a\\.", "^r\\.")


def definitions() -> dict[str, Any]:
    """RabbitMQ definitions with the users above (SHA-256 hashes, so both brokers take them as they are)."""
    return {
        "users": [
            {
                "name": name,
                "password_hash": hash_password(PASSWORD),
                "hashing_algorithm": "rabbit_password_hashing_sha256",
                "tags": [],
            }
            for name in USERS
        ],
        "vhosts": [{"name": "/"}],
        "permissions": [
            {"user": name, "vhost": "/", "configure": c, "write": w, "read": r}
            for name, (c, w, r) in PERMISSIONS.items()
        ],
        "topic_permissions": [
            {"user": TOPIC[0], "vhost": "/", "exchange": TOPIC[1], "write": TOPIC[2], "read": TOPIC[3]}
        ],
    }


def _as(ctx: Ctx, user: str, fn: Callable[[Any], object], confirm: bool = False) -> Observation:
    """Run ``fn`` on a fresh channel of a fresh connection of ``user``; its outcome."""
    connection: pika.BlockingConnection | None = None

    def run() -> None:
        nonlocal connection
        connection = ctx.connect(credentials=pika.PlainCredentials(user, PASSWORD))
        ch = connection.channel()
        if confirm:
            ch.confirm_delivery()
        fn(ch)

    result = outcome(run)
    if connection is not None and connection.is_open:
        connection.close()
    return result


def _consume_published(ch: Any, publisher: Any, queue: str) -> None:
    """Bunny's read-only consumer: a passive declare of a queue another user declared, a consumer with
    manual acks, a message published by that other user, received and acked, the consumer cancelled."""
    ch.queue_declare(queue, passive=True)
    ch.basic_qos(prefetch_count=1)
    received: list[bytes] = []

    def on_message(channel: Any, method: Any, _properties: Any, body: bytes) -> None:
        received.append(body)
        channel.basic_ack(method.delivery_tag)

    tag = ch.basic_consume(queue, on_message)
    publisher.basic_publish("", queue, b"for the reader")
    deadline = time.monotonic() + 10
    while not received and time.monotonic() < deadline:
        ch.connection.process_data_events(time_limit=0.1)
    ch.basic_cancel(tag)
    if received != [b"for the reader"]:
        raise AssertionError(f"the reader received {received!r}")


def observe(ctx: Ctx) -> Observation:
    """Every row of the table for each user, plus what RabbitMQ does not check (dead-lettering, alternate
    exchanges, exchange-to-exchange routing) and connection.open in a vhost without permissions."""
    admin = ctx.channel()
    q = ctx.queue(admin, "q", exclusive=False)
    # The consume rows read a queue nothing is published to: how many of q's messages a broker pushes
    # between consume-ok and the cancel (or the close) is a race, not an access-control outcome.
    consume_q = ctx.queue(admin, "consume-q", exclusive=False)
    x = ctx.exchange(admin, "x")
    main = ctx.exchange(admin, "x-main", arguments={"alternate-exchange": ctx.name("ae")})
    ae = ctx.exchange(admin, "ae", "fanout")
    ae_q = ctx.queue(admin, "ae-q", exclusive=False)
    admin.queue_bind(ae_q, ae)
    e2e_dest = ctx.exchange(admin, "e2e-dest", "fanout")
    admin.exchange_bind(e2e_dest, main, "e2e")
    e2e_q = ctx.queue(admin, "e2e-q", exclusive=False)
    admin.queue_bind(e2e_q, e2e_dest)
    dlx = ctx.exchange(admin, "dlx", "fanout")
    dl_q = ctx.queue(admin, "dl-q", exclusive=False)
    admin.queue_bind(dl_q, dlx)
    dl_source = ctx.queue(admin, "dl-source", exclusive=False, arguments={"x-dead-letter-exchange": dlx})
    n = ctx.name
    rows: dict[str, Callable[[Any], object]] = {
        "exchange.declare": lambda ch: ch.exchange_declare(n("new-x")),
        "exchange.declare passive": lambda ch: ch.exchange_declare(x, passive=True),
        "exchange.declare with AE": lambda ch: ch.exchange_declare(
            n("new-ae-x"), arguments={"alternate-exchange": ae}
        ),
        "exchange.delete": lambda ch: ch.exchange_delete(n("new-x")),
        "queue.declare": lambda ch: ch.queue_declare(n("new-q")),
        "queue.declare server-named": lambda ch: ch.queue_declare("", exclusive=True),
        "queue.declare passive": lambda ch: ch.queue_declare(q, passive=True),
        "queue.declare with DLX": lambda ch: ch.queue_declare(
            n("new-dl-q"), arguments={"x-dead-letter-exchange": dlx}
        ),
        "queue.delete": lambda ch: ch.queue_delete(n("new-q")),
        "queue.purge": lambda ch: ch.queue_purge(q),
        "queue.bind": lambda ch: ch.queue_bind(q, x, "k"),
        "queue.unbind": lambda ch: ch.queue_unbind(q, x, "k"),
        "exchange.bind": lambda ch: ch.exchange_bind(e2e_dest, x, "k"),
        "exchange.unbind": lambda ch: ch.exchange_unbind(e2e_dest, x, "k"),
        "basic.publish": lambda ch: ch.basic_publish(x, "k", b"m"),
        "basic.publish default exchange": lambda ch: ch.basic_publish("", q, b"m"),
        "basic.get": lambda ch: ch.basic_get(q),
        "basic.consume": lambda ch: ch.basic_consume(consume_q, lambda *_: None),
        "topic publish allowed key": lambda ch: ch.basic_publish("amq.topic", "a.b", b"m"),
        "topic publish refused key": lambda ch: ch.basic_publish("amq.topic", "b.b", b"m"),
        "topic bind allowed key": lambda ch: ch.queue_bind(q, "amq.topic", "r.b"),
        "topic bind refused key": lambda ch: ch.queue_bind(q, "amq.topic", "b.b"),
        "topic unbind refused key": lambda ch: ch.queue_unbind(q, "amq.topic", "b.b"),
        "topic exchange.bind refused key": lambda ch: ch.exchange_bind(e2e_dest, "amq.topic", "b.b"),
        "topic publish on another exchange": lambda ch: ch.basic_publish("amq.direct", "b.b", b"m"),
        # Methods RabbitMQ checks nothing on, or only after a lookup that fails first.
        "queue.declare existing": lambda ch: ch.queue_declare(q, exclusive=False),
        "queue.declare passive missing": lambda ch: ch.queue_declare(n("missing-q"), passive=True),
        "exchange.declare passive missing": lambda ch: ch.exchange_declare(n("missing-x"), passive=True),
        "exchange.declare passive amq.direct": lambda ch: ch.exchange_declare("amq.direct", passive=True),
        "queue.delete missing": lambda ch: ch.queue_delete(n("missing-q")),
        "exchange.delete missing": lambda ch: ch.exchange_delete(n("missing-x")),
        "basic.qos": lambda ch: ch.basic_qos(prefetch_count=5),
        "basic.recover": lambda ch: ch.basic_recover(requeue=True),
        "tx.select and commit": lambda ch: (ch.tx_select(), ch.tx_commit()),
        "confirm.select": lambda ch: ch.confirm_delivery(),
        "basic.consume and cancel": lambda ch: ch.basic_cancel(ch.basic_consume(consume_q, lambda *_: None)),
    }
    seen: dict[str, Observation] = {}
    for user in ("full", "nothing", "no-write", "no-configure", "reader", "bunny-reader", "topic"):
        for label, fn in rows.items():
            confirm = "publish" in label
            seen[f"{user}: {label}"] = _as(ctx, user, fn, confirm)
    seen["stranger: connection.open"] = _as(ctx, "stranger", lambda ch: None)
    # Not checked by RabbitMQ: where a message goes after the publish check (alternate exchange, bound
    # exchanges) and dead-lettering by a reader that has no write permission anywhere.
    seen["main-writer: unroutable to AE"] = _as(
        ctx, "main-writer", lambda ch: ch.basic_publish(main, "none", b"ae"), True
    )
    seen["main-writer: routed through E2E"] = _as(
        ctx, "main-writer", lambda ch: ch.basic_publish(main, "e2e", b"e2e"), True
    )
    admin.basic_publish("", dl_source, b"dl")

    def reject(ch: Any) -> None:
        method, _, _ = ch.basic_get(dl_source)
        ch.basic_reject(method.delivery_tag, requeue=False)

    seen["reader: dead-letters by reject"] = _as(ctx, "reader", reject)
    read_only_q = ctx.queue(admin, "read-only-q", exclusive=False)
    seen["bunny-reader: consumes what another user publishes"] = _as(
        ctx, "bunny-reader", lambda ch: _consume_published(ch, admin, read_only_q)
    )
    seen["bunny-reader: publishes on the default exchange"] = _as(
        ctx, "bunny-reader", lambda ch: ch.basic_publish("", q, b"m"), True
    )
    admin = ctx.channel()
    seen["ae queue"] = bodies(admin, ae_q)
    seen["e2e queue"] = bodies(admin, e2e_q)
    seen["dead-letter queue"] = bodies(admin, dl_q)
    for name in (n("new-q"), n("new-dl-q"), dl_source):
        admin.queue_delete(name)
    for name in (n("new-x"), n("new-ae-x"), main, ae, e2e_dest, dlx, x):
        admin.exchange_delete(name)
    return seen
