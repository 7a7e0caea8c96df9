"""MemoryStore, SqliteStore and PostgresStore are implementations of one `Store` contract: the same batches
must leave them in the same state, and a durable store reopened must hold exactly what it held before.

Batches are generated within the contract the writer keeps (a queue's (vhost, name) belongs to one live queue
id at a time; binding arguments are always a string), but otherwise freely: ops the writer never combines
(a "queue-" without its dropped_queues entry, a key both inserted and removed, deletes of missing rows,
inserts for queue ids that have no queue row) are all part of the apply order the stores document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.storage.base import KEY_SEQ_BITS, Batch, MessageRow, Store, message_key
from broker.storage.memory import MemoryStore
from tests.unit.storage.helpers import DurableStores, snapshot

TOPOLOGY_OPS = (
    "vhost+",
    "vhost-",
    "vhost~",
    "user+",
    "user-",
    "permission+",
    "permission-",
    "topic_permission+",
    "topic_permission-",
    "exchange+",
    "exchange-",
    "queue+",
    "queue-",
    "binding+",
    "binding-",
)
VHOSTS = ("/", "v")
EXCHANGES = ("x", "y")
QUEUE_NAMES = ("q1", "q2")
QUEUE_IDS = (1, 2, 3, 4)
MESSAGE_QUEUE_IDS = (1, 2, 3, 4, 5)  # 5 never gets a queue row: its messages are orphans
SEQS = (0, 1, 2, 3, (1 << KEY_SEQ_BITS) - 1)  # both ends of a queue's key range
ARGUMENTS = (None, "[]", '[["x-max-priority", "b", 5]]')
BINDING_ARGUMENTS = ("[]", '[["x-match", "S", "all"]]')

keys = st.builds(message_key, st.sampled_from(MESSAGE_QUEUE_IDS), st.sampled_from(SEQS))
bits = st.sampled_from((0, 1))


@dataclass
class LiveQueues:
    """The generator's view of which queue id owns which (vhost, name), so it keeps the UNIQUE contract."""

    by_name: dict[tuple[str, str], int] = field(default_factory=dict)
    by_id: dict[int, tuple[str, str]] = field(default_factory=dict)

    def declare(self, queue_id: int, vhost: str, name: str) -> bool:
        owner = self.by_name.get((vhost, name))
        if owner is not None and owner != queue_id:
            return False  # the core never declares a second live queue with the same name
        old = self.by_id.pop(queue_id, None)
        if old is not None:
            del self.by_name[old]
        self.by_name[(vhost, name)] = queue_id
        self.by_id[queue_id] = (vhost, name)
        return True

    def delete(self, queue_id: int) -> None:
        old = self.by_id.pop(queue_id, None)
        if old is not None:
            del self.by_name[old]

    def delete_vhost(self, vhost: str) -> None:
        for queue_id, (queue_vhost, _) in list(self.by_id.items()):
            if queue_vhost == vhost:
                self.delete(queue_id)


def _topology_op(draw: st.DrawFn, live: LiveQueues) -> tuple[str, tuple[Any, ...]] | None:
    kind = draw(st.sampled_from(TOPOLOGY_OPS))
    vhost = draw(st.sampled_from(VHOSTS))
    if kind in ("vhost+", "vhost-"):
        if kind == "vhost-":
            live.delete_vhost(vhost)
        return kind, (vhost,)
    user = draw(st.sampled_from(("u1", "u2")))
    if kind == "vhost~":
        return kind, (vhost, draw(st.sampled_from(('{"description": "a"}', '{"tags": ["t"]}'))))
    if kind == "user+":
        password = draw(st.sampled_from((None, "", "secret")))
        hashed = draw(st.sampled_from((None, "aGFzaA==")))
        algorithm = None if hashed is None else "rabbit_password_hashing_sha256"
        return kind, (user, password, hashed, algorithm, draw(st.sampled_from(("[]", '["administrator"]'))))
    if kind == "user-":
        return kind, (user,)
    if kind == "permission+":
        return kind, (user, vhost, ".*", draw(st.sampled_from(("^$", ".*"))), "^a")
    if kind == "permission-":
        return kind, (user, vhost)
    exchange = draw(st.sampled_from(EXCHANGES))
    if kind == "topic_permission+":
        return kind, (user, vhost, exchange, draw(st.sampled_from(("^a", ".*"))), "^r")
    if kind == "topic_permission-":
        return kind, (user, vhost, exchange)
    if kind == "exchange+":
        row = (
            vhost,
            draw(st.sampled_from(EXCHANGES)),
            draw(st.sampled_from(("direct", "topic"))),
            draw(bits),
            draw(bits),
            draw(st.sampled_from(ARGUMENTS)),
        )
        return kind, row
    if kind == "exchange-":
        return kind, (vhost, draw(st.sampled_from(EXCHANGES)))
    if kind == "queue+":
        queue_id, name = draw(st.sampled_from(QUEUE_IDS)), draw(st.sampled_from(QUEUE_NAMES))
        if not live.declare(queue_id, vhost, name):
            return None
        return kind, (queue_id, vhost, name, draw(bits), draw(st.sampled_from(ARGUMENTS)))
    if kind == "queue-":
        queue_id = draw(st.sampled_from(QUEUE_IDS))
        live.delete(queue_id)
        return kind, (queue_id,)
    destination_type = draw(st.sampled_from(("queue", "exchange")))
    names = QUEUE_NAMES if destination_type == "queue" else EXCHANGES
    binding = (
        vhost,
        draw(st.sampled_from(EXCHANGES)),
        destination_type,
        draw(st.sampled_from(names)),
        draw(st.sampled_from(("", "k", "a.#"))),
        draw(st.sampled_from(BINDING_ARGUMENTS)),
    )
    return kind, binding


def _message_row(draw: st.DrawFn, key: int) -> MessageRow:
    return (
        key,
        draw(st.sampled_from(("", "x"))),
        draw(st.sampled_from(("k", "a.b"))),
        draw(st.binary(max_size=8)),
        draw(st.binary(max_size=8)),
        draw(st.sampled_from((None, 1_700_000_000_000, 1_700_000_060_000))),
        draw(bits),
    )


@st.composite
def batch_sequences(draw: st.DrawFn) -> list[Batch]:
    live = LiveQueues()
    batches: list[Batch] = []
    for batch_id in range(1, draw(st.integers(1, 6)) + 1):
        batch = Batch(batch_id)
        for _ in range(draw(st.integers(0, 6))):
            op = _topology_op(draw, live)
            if op is not None:
                batch.topology.append(op)
        for key in draw(st.lists(keys, max_size=6)):
            batch.added[key] = _message_row(draw, key)
        batch.delivered = draw(st.lists(keys, max_size=4))
        batch.removed = draw(st.lists(keys, max_size=4))
        batch.dropped_queues = draw(st.lists(st.sampled_from(MESSAGE_QUEUE_IDS), max_size=2))
        batches.append(batch)
    return batches


def check_max_queue_id(memory: MemoryStore, sqlite: Store) -> None:
    """The writer numbers new queues from max_queue_id() + 1: that must never be an id the store still holds
    a queue row or a message for (a new queue would inherit them at the next recovery)."""
    state = snapshot(memory)
    queue_ids = {row.id for row in state["queues"]}
    message_queue_ids = {queue_id for queue_id, rows in state["messages"].items() if rows}
    in_use = max(queue_ids | message_queue_ids, default=0)
    assert memory.max_queue_id() >= in_use
    assert sqlite.max_queue_id() >= in_use
    if message_queue_ids <= queue_ids:
        assert memory.max_queue_id() == sqlite.max_queue_id() == max(queue_ids, default=0)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batches=batch_sequences())
def test_memory_and_durable_stores_agree_batch_by_batch_and_after_reopen(
    durable_stores: DurableStores, batches: list[Batch]
) -> None:
    location = durable_stores.fresh()  # one per example: the fixture is shared by hypothesis' examples
    memory = MemoryStore()
    durable = durable_stores.open(location)
    try:
        for batch in batches:
            memory.apply(batch)
            durable.apply(batch)
            assert snapshot(durable) == snapshot(memory), f"after batch {batch.id}"
            check_max_queue_id(memory, durable)
    finally:
        durable.close()
    reopened = durable_stores.open(location)
    try:
        assert snapshot(reopened) == snapshot(memory)
        check_max_queue_id(memory, reopened)
    finally:
        reopened.close()


def test_a_queue_delete_takes_its_stored_messages_with_it_in_every_store(
    durable_stores: DurableStores,
) -> None:
    """The documented meaning of "queue-", pinned by example: the queue row and its messages go, even when
    the batch does not also list the queue in dropped_queues."""
    row: MessageRow = (message_key(1, 1), "", "q", b"h", b"b", None, 0)
    declare = Batch(1, topology=[("queue+", (1, "/", "q", 0, None))], added={row[0]: row})
    delete = Batch(2, topology=[("queue-", (1,))])
    stores: list[Store] = [MemoryStore(), durable_stores.open(durable_stores.fresh())]
    try:
        for store in stores:
            store.apply(declare)
            assert list(store.messages(1)) == [row]
            store.apply(delete)
            assert store.load().queues == []
            assert list(store.messages(1)) == [], type(store).__name__
    finally:
        for store in stores:
            store.close()
