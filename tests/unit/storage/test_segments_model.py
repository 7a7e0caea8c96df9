"""Random message batches applied to the segment-backed SqliteStore and to the MemoryStore give the same
messages, delivery counts and highest queue id, batch by batch and after every reopen: with segments small
enough that batches roll them, acks land in later segments than their messages, segments empty and go, and
sparse ones are compacted; and runs of batches committed as one (``apply_all``) give what they give one by
one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.storage.base import Batch, MessageRow, message_key
from broker.storage.memory import MemoryStore
from broker.storage.sqlite import SqliteStore

QUEUE_IDS = (1, 2, 3)
SEQS = range(1, 13)

keys = st.builds(message_key, st.sampled_from(QUEUE_IDS), st.sampled_from(SEQS))


@st.composite
def rows(draw: st.DrawFn, key: int) -> MessageRow:
    return (
        key,
        draw(st.sampled_from(("", "x"))),
        draw(st.sampled_from(("k", "a.b"))),
        draw(st.binary(max_size=8)),
        draw(st.binary(max_size=300)),
        draw(st.sampled_from((None, 1_700_000_000_000))),
        draw(st.sampled_from((0, 1))),
    )


@st.composite
def steps(draw: st.DrawFn) -> list[Batch | None]:
    """Batches, and None where the store is closed and opened again."""
    out: list[Batch | None] = []
    for batch_id in range(2, draw(st.integers(1, 14)) + 2):
        if draw(st.integers(0, 4)) == 0:
            out.append(None)
        batch = Batch(batch_id)
        for key in draw(st.lists(keys, max_size=6)):
            batch.added[key] = draw(rows(key))
        batch.delivered = draw(st.lists(keys, max_size=4))
        batch.counted = {
            key: (draw(st.integers(0, 3)), draw(st.sampled_from((0, 1))))
            for key in draw(st.lists(keys, max_size=2))
        }
        batch.removed = draw(st.lists(keys, max_size=6))
        batch.dropped_queues = (
            draw(st.lists(st.sampled_from(QUEUE_IDS), max_size=1)) if draw(st.booleans()) else []
        )
        if draw(st.integers(0, 5)) == 0:  # a queue deleted and declared again: its messages go with it
            queue_id = draw(st.sampled_from(QUEUE_IDS))
            batch.topology = [("queue-", (queue_id,)), ("queue+", (queue_id, "/", f"q{queue_id}", 0, None))]
            batch.dropped_queues.append(queue_id)
        out.append(batch)
    return out


def _state(store: SqliteStore | MemoryStore) -> tuple[object, ...]:
    counts = {queue_id: store.delivery_counts(queue_id) for queue_id in QUEUE_IDS}
    return (
        {queue_id: list(store.messages(queue_id)) for queue_id in QUEUE_IDS},
        {
            queue_id: {key: count for key, count in found.items() if count}
            for queue_id, found in counts.items()
        },
        store.max_queue_id(),
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=steps(),
    segment_bytes=st.sampled_from((1, 600, 2000, 1 << 20)),
    fsync=st.sampled_from(("always", "never")),
)
def test_segment_store_and_memory_store_agree_across_reopens(
    plan: list[Batch | None], segment_bytes: int, fsync: str
) -> None:
    declare = Batch(
        1, topology=[("queue+", (queue_id, "/", f"q{queue_id}", 0, None)) for queue_id in QUEUE_IDS]
    )
    with tempfile.TemporaryDirectory() as directory:
        memory = MemoryStore()
        memory.apply(declare)
        store = SqliteStore(Path(directory), fsync, segment_bytes)
        try:
            store.apply(declare)
            for step in plan:
                if step is None:
                    store.close()
                    store = SqliteStore(Path(directory), fsync, segment_bytes)
                else:
                    memory.apply(step)
                    store.apply(step)
                assert _state(store) == _state(memory)
        finally:
            store.close()
        reopened = SqliteStore(Path(directory), fsync, segment_bytes)
        try:
            assert _state(reopened) == _state(memory)
        finally:
            reopened.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=steps(),
    cuts=st.lists(st.integers(1, 4), min_size=16, max_size=16),
    segment_bytes=st.sampled_from((1, 600, 2000, 1 << 20)),
)
def test_batches_committed_together_leave_what_they_leave_one_by_one(
    plan: list[Batch | None], cuts: list[int], segment_bytes: int
) -> None:
    """The writer thread hands ``apply_all`` every batch that waited (broker.storage.writer): runs of them
    as one append, a message acked by a later batch of the run never written. The store must end as if it
    had applied them one by one."""
    declare = Batch(
        1, topology=[("queue+", (queue_id, "/", f"q{queue_id}", 0, None)) for queue_id in QUEUE_IDS]
    )
    batches = [step for step in plan if step is not None]
    with tempfile.TemporaryDirectory() as directory:
        memory = MemoryStore()
        memory.apply(declare)
        store = SqliteStore(Path(directory), "always", segment_bytes)
        try:
            store.apply(declare)
            start = 0
            for cut in cuts:
                group = batches[start : start + cut]
                if not group:
                    break
                for batch in group:
                    memory.apply(batch)
                store.apply_all(group)
                start += cut
                assert _state(store) == _state(memory)
        finally:
            store.close()
        reopened = SqliteStore(Path(directory), "always", segment_bytes)
        try:
            assert _state(reopened) == _state(memory)
        finally:
            reopened.close()
