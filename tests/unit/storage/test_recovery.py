"""Recovery through the real core: a Broker writes through a StoreWriter into each store (memory, SQLite,
PostgreSQL: the ``reopen`` fixture), and a new Broker over the same store gets back what RabbitMQ would bring
back after a restart, and nothing else: durable exchanges, queues and bindings; persistent messages of
durable queues, in publish order, with their expiry deadlines and priorities; unacked ones redelivered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.core.broker import Broker
from broker.core.model.clock import ManualClock
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.queue_admin import basic_get
from broker.core.queues.queue_features import TimedEnvelope
from broker.session.fates import stored_delivery
from broker.storage.base import Store
from broker.storage.memory import MemoryStore
from broker.storage.recovery import RecoveryReport, recover
from broker.storage.writer import StoreWriter
from tests.unit.storage.helpers import ManualLoop, make_message

T0 = 1_700_000_000_000


@dataclass
class Node:
    """One broker run over ``store``: what `Server` wires up, with a hand-run loop."""

    store: Store
    clock: ManualClock = field(default_factory=ManualClock)
    loop: ManualLoop = field(default_factory=ManualLoop)
    failures: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.writer = StoreWriter(self.store, self.loop.call_soon, self.loop.call_soon, self.failures.append)
        self.broker = Broker(self.loop.call_soon, clock=self.clock, persistence=self.writer)

    def recover(self) -> RecoveryReport:
        report = recover(self.broker, self.store, self.writer)
        self.settle()
        return report

    def stop(self) -> None:
        """A clean shutdown: pending writes committed, the store closed as clean."""
        self.settle()
        self.writer.close()

    def settle(self) -> None:
        self.loop.drain()
        assert not self.writer.busy
        assert self.failures == []

    def publish(
        self, exchange: str, routing_key: str, body: str, vhost: str = "/", **props: Any
    ) -> list[str]:
        message = make_message(exchange, routing_key, body.encode(), **props)
        queues, rejected = self.broker.vhosts[vhost].publish(exchange, message)
        assert not rejected
        return [queue.name for queue in queues]


def drain_queue(queue: Queue) -> list[Envelope]:
    envelopes: list[Envelope] = []
    while (envelope := basic_get(queue)) is not None:
        envelopes.append(envelope)
    return envelopes


def bodies(envelopes: list[Envelope]) -> list[str]:
    return [envelope.message.body.decode() for envelope in envelopes]


def test_durable_topology_and_persistent_messages_come_back_and_nothing_else(reopen: Any) -> None:
    first = Node(reopen())
    first.recover()  # as the server does at every start: an empty store gets the configured grants
    owner = object()
    first.broker.add_vhost("v2")
    root = first.broker.vhosts["/"]
    root.declare_exchange("dx", "direct", durable=True)
    root.declare_exchange("src", "topic", durable=True)
    root.declare_exchange("tx", "direct", durable=False)
    root.declare_queue("dq", owner, durable=True)
    root.declare_queue("tq", owner, durable=False)
    root.declare_queue("xq", owner, durable=True, exclusive=True)
    first.broker.vhosts["v2"].declare_queue("dq2", owner, durable=True)
    for queue in ("dq", "tq", "xq"):
        root.bind_queue(queue, "dx", "k", None, owner)
    root.bind_exchange("dx", "src", "k", {"b": 1})  # E2E, both ends durable: kept
    root.bind_queue("dq", "amq.topic", "t.#", None, owner)  # a system exchange is durable
    root.bind_exchange("dx", "tx", "k", None)  # transient source: not kept
    root.bind_queue("dq", "tx", "k", None, owner)

    published: list[tuple[str, bytes]] = []
    for number in range(6):
        persistent = number % 2 == 0
        exchange = "src" if number >= 3 else "dx"
        props: dict[str, Any] = {"delivery_mode": 2 if persistent else 1, "content_type": "text/plain"}
        if number == 4:
            props["headers"] = {"h": "v", "n": 7}
        reached = first.publish(exchange, "k", f"m{number}", **props)
        assert sorted(reached) == ["dq", "tq", "xq"]
        if persistent:
            published.append(
                (f"m{number}", make_message(exchange, "k", f"m{number}".encode(), **props).header_payload)
            )
    assert first.publish("", "dq2", "v2-persistent", vhost="v2", delivery_mode=2) == ["dq2"]
    assert first.publish("", "dq2", "v2-transient", vhost="v2") == ["dq2"]

    dq = root.queues["dq"]
    unacked = basic_get(dq)  # m0: delivered, not acked when the broker stops
    assert unacked is not None
    stored_delivery(dq, unacked, no_ack=False)
    consumed = basic_get(dq)  # m1 (transient) with no_ack
    assert consumed is not None
    stored_delivery(dq, consumed, no_ack=True)
    consumed = basic_get(dq)  # m2 with no_ack: gone from the store too
    assert consumed is not None
    stored_delivery(dq, consumed, no_ack=True)
    first.settle()
    first_ids = {queue.name: queue.store_id for queue in (dq, first.broker.vhosts["v2"].queues["dq2"])}

    first.stop()  # a clean stop: the next start trusts the delivered marks
    second = Node(reopen())
    writes = second.writer.writes
    report = second.recover()

    assert second.writer.writes == writes  # replay wrote nothing back
    assert report == RecoveryReport(vhosts=2, exchanges=2, queues=2, bindings=3, messages=3, redelivered=1)
    root = second.broker.vhosts["/"]
    assert {"dx", "src"} <= set(root.exchanges)
    assert "tx" not in root.exchanges
    assert set(root.queues) == {"dq"}
    assert set(second.broker.vhosts["v2"].queues) == {"dq2"}
    dq = root.queues["dq"]
    assert dq.durable
    assert dq.store_id == first_ids["dq"]
    assert second.broker.vhosts["v2"].queues["dq2"].store_id == first_ids["dq2"]

    assert second.publish("src", "k", "e2e", delivery_mode=2) == ["dq"]  # E2E binding is back
    assert second.publish("amq.topic", "t.x", "topic") == ["dq"]
    assert second.publish("dx", "k", "direct") == ["dq"]
    second.settle()

    envelopes = drain_queue(dq)
    assert bodies(envelopes) == ["m0", "m4", "e2e", "topic", "direct"]
    assert [envelope.redelivered for envelope in envelopes] == [True, False, False, False, False]
    restored = {envelope.message.body.decode(): envelope.message for envelope in envelopes[:2]}
    headers = dict(published)
    for body, message in restored.items():
        assert message.header_payload == headers[body]  # the publisher's properties, byte for byte
        assert message.delivery_mode == 2
    assert restored["m4"].headers == {"h": "v", "n": 7}
    assert (restored["m4"].exchange, restored["m4"].routing_key) == ("src", "k")
    seqs = [envelope.seq for envelope in envelopes]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)  # new messages numbered after the recovered ones
    assert bodies(drain_queue(second.broker.vhosts["v2"].queues["dq2"])) == ["v2-persistent"]

    # The new queue of the second run does not reuse a stored id; its messages are stored under it.
    fresh = root.declare_queue("fresh", owner, durable=True)
    assert fresh.store_id > max(first_ids.values())
    second.publish("", "fresh", "f", delivery_mode=2)
    second.settle()
    assert [row[4] for row in second.store.messages(fresh.store_id)] == [b"f"]


def test_a_deleted_durable_queue_and_vhost_stay_deleted(reopen: Any) -> None:
    first = Node(reopen())
    first.recover()  # as every run begins: only a run that began may mark its stop clean
    owner = object()
    first.broker.add_vhost("gone")
    first.broker.vhosts["gone"].declare_queue("q", owner, durable=True)
    first.publish("", "q", "lost", vhost="gone", delivery_mode=2)
    root = first.broker.vhosts["/"]
    root.declare_queue("deleted", owner, durable=True)
    first.publish("", "deleted", "lost", delivery_mode=2)
    root.declare_queue("kept", owner, durable=True)
    first.publish("", "kept", "kept", delivery_mode=2)
    first.settle()
    root.delete_queue("deleted", owner)
    first.broker.delete_vhost("gone")
    first.settle()

    first.stop()  # a clean stop: the next start trusts the delivered marks
    second = Node(reopen())
    report = second.recover()

    assert report == RecoveryReport(vhosts=1, queues=1, messages=1)
    assert set(second.broker.vhosts) == {"/"}
    assert set(second.broker.vhosts["/"].queues) == {"kept"}
    assert sum(len(list(second.store.messages(queue_id))) for queue_id in range(1, 8)) == 1


def test_message_ttl_deadlines_survive_recovery(reopen: Any) -> None:
    first = Node(reopen(), clock=ManualClock(start_ms=T0))
    owner = object()
    root = first.broker.vhosts["/"]
    root.declare_queue("ttl", owner, durable=True, arguments={"x-message-ttl": 60_000})
    first.publish("", "ttl", "early", delivery_mode=2)  # expires at T0 + 60 s
    first.clock.advance(20)
    first.publish("", "ttl", "short", delivery_mode=2, expiration="5000")  # T0 + 25 s
    first.publish("", "ttl", "late", delivery_mode=2)  # expires at T0 + 80 s
    first.settle()

    # The broker comes back 22 s after the first run started.
    first.stop()  # a clean stop: the next start trusts the delivered marks
    second = Node(reopen(), clock=ManualClock(start_ms=T0 + 22_000))
    second.recover()
    queue = second.broker.vhosts["/"].queues["ttl"]
    deadlines = {
        envelope.message.body.decode(): getattr(envelope, "expires_at", None) for envelope in queue.ready
    }
    assert deadlines == {"early": T0 + 60_000, "late": T0 + 80_000, "short": T0 + 25_000}

    # Expiry happens at the head (RabbitMQ): "short" waits behind "early", which is due at T0 + 60 s.
    second.clock.advance(37.9)
    second.settle()
    assert bodies(list(queue.ready)) == ["early", "short", "late"]
    second.clock.advance(0.101)  # T0 + 60.001 s
    second.settle()
    assert bodies(list(queue.ready)) == ["late"]  # "early" expired on time, then "short" at the head
    assert [row[4] for row in second.store.messages(queue.store_id)] == [
        b"late"
    ]  # expiry removed the stored copies

    second.stop()  # a clean stop: the next start trusts the delivered marks
    third = Node(reopen(), clock=ManualClock(start_ms=T0 + 90_000))  # after every deadline
    third.recover()
    assert list(third.broker.vhosts["/"].queues["ttl"].ready) == []
    assert list(third.store.messages(queue.store_id)) == []


def test_a_per_message_expiration_survives_recovery_on_a_plain_queue(reopen: Any) -> None:
    """The expiration property alone makes a plain queue track deadlines; after a restart the message must
    still expire (RabbitMQ never delivers an expired message), not become immortal."""
    first = Node(reopen(), clock=ManualClock(start_ms=T0))
    owner = object()
    first.broker.vhosts["/"].declare_queue("plain", owner, durable=True)
    first.publish("", "plain", "expiring", delivery_mode=2, expiration="10000")  # due at T0 + 10 s
    first.publish("", "plain", "forever", delivery_mode=2)
    first.publish("", "plain", "expired-while-down", delivery_mode=2, expiration="1000")  # T0 + 1 s
    first.settle()

    first.stop()  # a clean stop: the next start trusts the delivered marks
    second = Node(reopen(), clock=ManualClock(start_ms=T0 + 5_000))
    second.recover()
    queue = second.broker.vhosts["/"].queues["plain"]
    expiring = queue.ready[0]
    assert isinstance(expiring, TimedEnvelope)
    assert expiring.expires_at == T0 + 10_000

    second.clock.advance(5.001)
    second.settle()
    assert bodies(drain_queue(queue)) == ["forever"]  # "expired-while-down" is dropped at the head, unsent
    second.settle()
    assert [row[4] for row in second.store.messages(queue.store_id)] == [b"forever"]  # got, not yet acked


def test_a_priority_queue_recovers_in_priority_order(reopen: Any) -> None:
    first = Node(reopen())
    owner = object()
    first.broker.vhosts["/"].declare_queue("prio", owner, durable=True, arguments={"x-max-priority": 5})
    priorities: list[int | None] = [1, None, 5, 3, 5, 0, 9]  # 9 is capped at the maximum, 5
    for number, priority in enumerate(priorities):
        props: dict[str, Any] = {"delivery_mode": 2}
        if priority is not None:
            props["priority"] = priority
        first.publish("", "prio", f"p{number}", **props)
    first.settle()

    first.stop()  # a clean stop: the next start trusts the delivered marks
    second = Node(reopen())
    report = second.recover()

    assert report.messages == len(priorities)
    queue = second.broker.vhosts["/"].queues["prio"]
    assert bodies(drain_queue(queue)) == ["p2", "p4", "p6", "p3", "p0", "p1", "p5"]


def test_a_crash_recovery_writes_the_delivered_mark_so_a_clean_stop_keeps_it(reopen: Any) -> None:
    """After a crash every recovered message comes back redelivered; a clean stop of that run before they were
    delivered again must not bring them back unflagged at the next start (rabbit_queue_index marks them all
    delivered at a dirty recovery)."""
    first = Node(reopen())
    first.recover()
    first.broker.vhosts["/"].declare_queue("q", None, durable=True)
    first.publish("", "q", "m", delivery_mode=2)
    first.settle()
    if isinstance(first.store, MemoryStore):
        first.store.clean = False  # what a crash leaves: the run never marked its stop clean
    else:
        first.store.close(clean=False)  # the crash: the stop never marked clean
    second = Node(reopen())
    assert second.recover().redelivered == 1
    second.stop()  # clean, before the message went out again
    third = Node(reopen())
    third.recover()
    envelopes = drain_queue(third.broker.vhosts["/"].queues["q"])
    assert bodies(envelopes) == ["m"]
    assert [envelope.redelivered for envelope in envelopes] == [True]


def test_a_vhosts_default_queue_type_and_the_default_description_come_back(reopen: Any) -> None:
    first = Node(reopen())
    first.recover()
    assert first.broker.vhost_metadata["/"]["description"] == "Default virtual host"
    first.broker.add_vhost("tenant", {"description": "t", "tags": [], "default_queue_type": "quorum"})
    first.stop()

    second = Node(reopen())
    second.recover()
    tenant = second.broker.vhosts["tenant"]
    # rabbit_amqqueue:augment_declare_args: durable, non-exclusive, non-auto-delete queues only.
    assert tenant.declare_queue("durable", None, durable=True).arguments == {"x-queue-type": "quorum"}
    assert tenant.declare_queue("transient", None).arguments == {}
    assert tenant.declare_queue("auto-delete", None, durable=True, auto_delete=True).arguments == {}
    assert tenant.declare_queue("exclusive", object(), durable=True, exclusive=True).arguments == {}
    explicit = {"x-queue-type": "classic"}
    assert tenant.declare_queue("explicit", None, durable=True, arguments=explicit).arguments == explicit
    assert second.broker.vhost_metadata["/"]["description"] == "Default virtual host"
