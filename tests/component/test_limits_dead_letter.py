"""x-max-length / x-overflow and dead-lettering with the x-death headers RabbitMQ writes."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pamqp import commands, header
from pamqp.body import ContentBody

from broker.core.events.events import Fate
from tests.component.features import TimedClient
from tests.component.harness import Recorder


def _dlx_pair(client: TimedClient, source_args: dict[str, Any]) -> None:
    client.send(1, commands.Exchange.Declare(exchange="dlx", exchange_type="fanout"))
    client.declare("dead")
    client.send(1, commands.Queue.Bind(queue="dead", exchange="dlx"))
    client.declare("src", **{"x-dead-letter-exchange": "dlx", **source_args})
    client.received()


@pytest.mark.parametrize(
    ("arguments", "published", "kept"),
    [
        ({"x-max-length": 2}, [b"1", b"2", b"3"], [b"2", b"3"]),
        ({"x-max-length-bytes": 10}, [b"aaaa", b"bbbb", b"cccc"], [b"bbbb", b"cccc"]),
    ],
    ids=["max-length", "max-length-bytes-counts-body-bytes-of-ready-messages"],
)
def test_drop_head_keeps_the_newest_messages(
    arguments: dict[str, Any], published: list[bytes], kept: list[bytes]
) -> None:
    client = TimedClient()
    client.declare("q", **arguments)
    for body in published:
        client.publish(1, body, "q")
    assert client.bodies("q") == kept


def test_max_length_zero_with_drop_head_still_delivers_to_a_waiting_consumer() -> None:
    client = TimedClient()
    client.declare("q", **{"x-max-length": 0})
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", no_ack=True))
    client.received()
    client.publish(1, b"x", "q")
    assert [body for _, _, body in client.deliveries()] == [b"x"]


def test_reject_publish_nacks_the_refused_publish_and_acks_the_others() -> None:
    client = TimedClient()
    client.declare("q", **{"x-max-length": 1, "x-overflow": "reject-publish"})
    client.send(1, commands.Confirm.Select())
    client.received()
    client.publish(1, b"1", "q")
    client.publish(1, b"2", "q")
    frames = [value for _, value in client.received()]
    assert [(type(f).__name__, f.delivery_tag) for f in frames] == [("Ack", 1), ("Nack", 2)]
    assert client.bodies("q") == [b"1"]


def test_reject_publish_counts_as_routed_for_mandatory() -> None:
    client = TimedClient()
    client.declare("q", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    client.send(1, commands.Basic.Publish(exchange="", routing_key="q", mandatory=True))
    client.send(1, header.ContentHeader(0, 1, commands.Basic.Properties()))
    client.send(1, ContentBody(b"x"))
    client.send(1, commands.Basic.Publish(exchange="", routing_key="missing", mandatory=True))
    client.send(1, header.ContentHeader(0, 1, commands.Basic.Properties()))
    client.send(1, ContentBody(b"y"))
    returns = [v.routing_key for _, v in client.received() if isinstance(v, commands.Basic.Return)]
    assert returns == ["missing"]


def test_drop_head_dead_letters_with_reason_maxlen() -> None:
    client = TimedClient()
    _dlx_pair(client, {"x-max-length": 1})
    client.publish(1, b"old", "src")
    client.publish(1, b"new", "src")
    got = client.get("dead")
    assert got is not None
    assert got[2] == b"old"
    assert got[1].headers["x-death"][0]["reason"] == "maxlen"


def test_reject_publish_dlx_dead_letters_the_refused_message_and_nacks_it() -> None:
    client = TimedClient()
    _dlx_pair(client, {"x-max-length": 1, "x-overflow": "reject-publish-dlx"})
    client.send(1, commands.Confirm.Select())
    client.received()
    client.publish(1, b"kept", "src")
    client.publish(1, b"refused", "src")
    assert [type(v).__name__ for _, v in client.received()] == ["Ack", "Nack"]
    got = client.get("dead")
    assert got is not None
    assert (got[2], got[1].headers["x-first-death-reason"]) == (b"refused", "maxlen")
    assert client.bodies("src") == [b"kept"]


def test_rejected_message_carries_x_death_exactly_as_rabbitmq_writes_it() -> None:
    client = TimedClient()
    _dlx_pair(client, {})
    client.publish(1, b"m", "src", expiration="60000", headers={"CC": ["other"], "h": 5})
    assert client.get("src", no_ack=False) is not None
    client.send(1, commands.Basic.Reject(delivery_tag=1, requeue=False))
    got = client.get("dead")
    assert got is not None
    deliver, props, body = got
    assert (deliver.exchange, deliver.routing_key, body) == ("dlx", "src", b"m")
    assert props.expiration is None
    death = {
        "original-expiration": "60000",
        "count": 1,
        "reason": "rejected",
        "queue": "src",
        "time": datetime.datetime.fromtimestamp(client.clock.now_ms() // 1000, tz=datetime.UTC),
        "exchange": "",
        "routing-keys": ["src", "other"],
    }
    assert list(props.headers) == sorted(props.headers)
    assert [list(entry.items()) for entry in props.headers["x-death"]] == [list(death.items())]
    assert {k: v for k, v in props.headers.items() if k != "x-death"} == {
        "CC": ["other"],
        "h": 5,
        "x-first-death-exchange": "",
        "x-first-death-queue": "src",
        "x-first-death-reason": "rejected",
        "x-last-death-exchange": "",
        "x-last-death-queue": "src",
        "x-last-death-reason": "rejected",
    }


def test_dead_letter_routing_key_replaces_the_keys_and_drops_cc() -> None:
    client = TimedClient()
    client.send(1, commands.Exchange.Declare(exchange="dlx", exchange_type="direct"))
    client.declare("dead")
    client.send(1, commands.Queue.Bind(queue="dead", exchange="dlx", routing_key="dl-key"))
    client.declare("src", **{"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "dl-key"})
    client.publish(1, b"m", "src", headers={"CC": ["x"]})
    client.received()
    client.get("src", no_ack=False)
    client.send(1, commands.Basic.Nack(delivery_tag=1, requeue=False))
    got = client.get("dead")
    assert got is not None
    assert got[0].routing_key == "dl-key"
    assert "CC" not in got[1].headers
    assert got[1].headers["x-death"][0]["routing-keys"] == ["src", "x"]


def test_repeated_death_in_the_same_queue_for_the_same_reason_increments_count() -> None:
    client = TimedClient()
    # src dead-letters to the default exchange with its own name: a client-driven (rejected) cycle.
    client.declare("src", **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "src"})
    client.publish(1, b"m", "src")
    for tag in (1, 2, 3):
        client.get("src", no_ack=False)
        client.send(1, commands.Basic.Reject(delivery_tag=tag, requeue=False))
    got = client.get("src")
    assert got is not None
    deaths = got[1].headers["x-death"]
    assert [(d["queue"], d["reason"], d["count"]) for d in deaths] == [("src", "rejected", 3)]


def test_expiry_cycle_without_a_rejection_is_dropped() -> None:
    client = TimedClient()
    client.declare(
        "loop", **{"x-message-ttl": 100, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "loop"}
    )
    client.publish(1, b"m", "loop")
    client.advance(0.1)
    assert client.count("loop") == 0


def _expired_into_b_then_rejected_back_into_a() -> TimedClient:
    """Queues a (TTL 100 ms, dead-letters to b) and b (dead-letters to a); one message published to a expires
    into b, then b rejects it back into a."""
    client = TimedClient()
    client.declare("b", **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "a"})
    client.declare(
        "a", **{"x-message-ttl": 100, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "b"}
    )
    client.publish(1, b"m", "a")
    client.advance(0.1)  # a --expired--> b
    client.get("b", no_ack=False)
    client.send(1, commands.Basic.Reject(delivery_tag=1, requeue=False))  # b --rejected--> a
    return client


def test_two_reasons_make_two_entries_most_recent_first() -> None:
    client = _expired_into_b_then_rejected_back_into_a()
    got = client.get("a")
    assert got is not None
    headers = got[1].headers
    assert [(d["queue"], d["reason"]) for d in headers["x-death"]] == [("b", "rejected"), ("a", "expired")]
    assert (headers["x-first-death-queue"], headers["x-last-death-queue"]) == ("a", "b")


A_TO_B = {"x-message-ttl": 100, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "b"}


def test_a_rejection_inside_the_history_makes_an_expiry_cycle_legal() -> None:
    client = _expired_into_b_then_rejected_back_into_a()
    client.advance(0.1)  # a --expired--> b again: b's last death was a rejection, so not a cycle
    got = client.get("b")
    assert got is not None
    deaths = got[1].headers["x-death"]
    assert [(d["queue"], d["reason"], d["count"]) for d in deaths] == [
        ("a", "expired", 2),
        ("b", "rejected", 1),
    ]


def test_missing_dead_letter_exchange_drops_the_message() -> None:
    client = TimedClient()
    client.declare("src", **{"x-dead-letter-exchange": "nowhere"})
    client.publish(1, b"m", "src")
    client.get("src", no_ack=False)
    client.send(1, commands.Basic.Reject(delivery_tag=1, requeue=False))
    assert client.count("src") == 0


def test_fates_for_maxlen_drop_and_dead_lettering() -> None:
    client = TimedClient()
    recorder = Recorder()
    client.broker.events.attach(recorder)
    client.declare("plain", **{"x-max-length": 1})
    _dlx_pair(client, {"x-message-ttl": 5})
    client.publish(1, b"1", "plain")
    client.publish(1, b"2", "plain")
    client.publish(1, b"3", "src")
    client.advance(0.005)
    fates = [
        (e.fate, e.queue, e.detail.get("reason"))
        for e in recorder.messages
        if e.fate in (Fate.DROPPED, Fate.EXPIRED, Fate.DEAD_LETTERED)
    ]
    assert fates == [
        (Fate.DROPPED, "plain", "maxlen"),
        (Fate.EXPIRED, "src", None),
        (Fate.DEAD_LETTERED, "src", "expired"),
    ]
