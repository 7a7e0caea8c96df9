"""Packed row batches: values survive packing, strings are stored once, buffers are recycled safely."""

from __future__ import annotations

from broker.journal.rows import CODE, LAYOUTS, NULL, RowBuffer, batch_of, recycle
from broker.journal.schema import DELIVERIES, EVENTS, ROUTE_CAPTURE

T = 1_700_000_000_123_456_789


def test_rows_come_back_as_they_were_packed_with_nulls_bools_and_lists() -> None:
    events = [
        (T, "deliver", "vh", 7, "ex", "rk", "q", T - 5, None, 16, None, None, 3, True, None, None, None),
        (T + 1, "queue_declared", "/", *(None,) * 13, '{"q":1}'),
        (T + 2, "ack", "vh", 8, "", "rk", "q", T, 2, 0, "conn", 1, None, False, "why", NULL + 1, None),
    ]
    captures = [(T, "/", 1, "x", "k", "{}", ["q1", "q2"]), (T, "/", 2, "x", "k", "{}", [])]
    assert list(batch_of(EVENTS, events).tuples()) == events
    assert list(batch_of(ROUTE_CAPTURE, captures).tuples()) == captures
    assert batch_of(EVENTS, events).first_ts() == T


def test_each_distinct_string_is_stored_once_and_the_vocabulary_has_fixed_codes() -> None:
    batch = batch_of(
        DELIVERIES, [(T, "ack", "/", i, "ex", "rk", "q", 1, 1, T, T, False, None) for i in range(50)]
    )
    assert batch.values.count("rk") == 1
    assert batch.intern("ack") == CODE["ack"]
    assert batch.intern(None) == 0


def test_recorder_buffers_are_recycled_and_start_empty() -> None:
    LAYOUTS[DELIVERIES].spare.clear()
    first = RowBuffer(DELIVERIES, 4, recyclable=True)
    first.append((T, "ack", "/", 1, "", "q", "q", 1, 1, T, T, False, None))
    recycle(first)
    second = RowBuffer(DELIVERIES, 4, recyclable=True)
    assert second.data is first.data
    assert (second.rows, list(second.tuples())) == (0, [])


def test_small_batches_are_not_kept_for_reuse() -> None:
    LAYOUTS[EVENTS].spare.clear()
    recycle(batch_of(EVENTS, [(T, "x", "/", *(None,) * 14)]))
    assert not LAYOUTS[EVENTS].spare
