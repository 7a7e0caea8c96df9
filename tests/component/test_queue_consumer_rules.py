"""Queue and consumer rules matched to RabbitMQ, on the ManualClock: a passive declare
renews x-expires; basic.get drops the expired messages it exposes (declare-ok counts expired messages until
they reach the head); a consumer x-priority and CC/BCC headers of the wrong type are refused with RabbitMQ's
code and text. The same cases run against RabbitMQ in tests/compat/scenarios/queue_rules.py."""

from __future__ import annotations

from typing import Any

from pamqp import commands

from tests.component.features import TimedClient
from tests.component.harness import close_of


def test_a_passive_declare_restarts_the_expiry_period() -> None:
    client = TimedClient()
    client.declare("q", **{"x-expires": 1000})
    client.advance(0.8)
    assert client.count("q") == 0  # passive
    client.advance(0.8)
    assert "q" in client.broker.vhosts["/"].queues
    client.advance(0.2)
    assert "q" not in client.broker.vhosts["/"].queues


def test_declare_ok_counts_expired_messages_until_they_reach_the_head() -> None:
    client = TimedClient()
    client.declare("q")
    for body, expiration in ((b"m1", None), (b"m2", "50"), (b"m3", None), (b"m4", "50"), (b"m5", "50")):
        client.publish(1, body, "q", expiration=expiration)
    client.advance(0.1)
    assert client.count("q") == 5  # m2, m4, m5 expired behind unexpired messages
    got = client.get("q")
    assert got is not None
    assert (got[2], got[0].message_count) == (b"m1", 3)  # m2, now at the head, dropped at once
    assert client.count("q") == 3  # m4 and m5 still counted behind m3
    got = client.get("q")
    assert got is not None
    assert (got[2], got[0].message_count) == (b"m3", 0)  # m4 and m5 exposed and dropped
    assert client.count("q") == 0


def _consume_with_priority(value: Any) -> tuple[int, int, str]:
    client = TimedClient()
    client.declare("q")
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", arguments={"x-priority": value}))
    return close_of(client.received())


def test_a_consumer_priority_that_is_not_an_integer_is_refused() -> None:
    prefix = "PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q' in vhost '/': "
    assert _consume_with_priority("5") == (1, 406, prefix + '"expected integer, got longstr"')
    assert _consume_with_priority(True) == (1, 406, prefix + '"expected integer, got bool"')
    assert _consume_with_priority([1]) == (1, 406, prefix + '"expected integer, got array"')


def test_an_integer_consumer_priority_is_accepted() -> None:
    client = TimedClient()
    client.declare("q")
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", arguments={"x-priority": 2**40}))
    assert client.expect(commands.Basic.ConsumeOk).consumer_tag == "c"


def _publish_with(headers: dict[str, Any], exchange: str = "") -> tuple[int, int, str] | None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"m", "q", exchange=exchange, headers=headers)
    frames = client.received()
    if not any(isinstance(value, commands.Channel.Close) for _, value in frames):
        return None
    return close_of(frames)


def test_cc_and_bcc_headers_that_are_not_arrays_are_refused() -> None:
    text = "PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,"
    assert _publish_with({"BCC": "q"}) == (1, 406, text + '"BCC",longstr}')
    assert _publish_with({"CC": 5, "BCC": "q"}) == (1, 406, text + '"CC",signedint}')  # CC is checked first
    assert _publish_with({"CC": ["q", 5]}) is None  # an array; its non-string items are skipped


def test_a_missing_exchange_is_reported_before_a_bad_bcc_header() -> None:
    assert _publish_with({"BCC": "q"}, exchange="nowhere") == (
        1,
        404,
        "NOT_FOUND - no exchange 'nowhere' in vhost '/'",
    )
