"""Plugin exchange types (x-delayed-message on the ManualClock, x-consistent-hash, x-recent-history,
x-modulus-hash), declared and used through a session."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pamqp import commands

from tests.component.features import TimedClient
from tests.component.harness import close_of


def _exchange(client: TimedClient, name: str, kind: str, **arguments: Any) -> None:
    client.send(1, commands.Exchange.Declare(exchange=name, exchange_type=kind, arguments=arguments))
    client.received()


def _delayed_fanout_to_q(client: TimedClient) -> None:
    """A delayed-message exchange ``delayed`` of fanout type with the queue ``q`` bound to it."""
    _exchange(client, "delayed", "x-delayed-message", **{"x-delayed-type": "fanout"})
    client.declare("q")
    client.send(1, commands.Queue.Bind(queue="q", exchange="delayed"))


def test_delayed_message_is_routed_when_its_delay_has_passed() -> None:
    client = TimedClient()
    _exchange(client, "delayed", "x-delayed-message", **{"x-delayed-type": "direct"})
    client.declare("q")
    client.send(1, commands.Queue.Bind(queue="q", exchange="delayed", routing_key="k"))
    client.publish(1, b"later", "k", exchange="delayed", headers={"x-delay": 1500})
    client.publish(1, b"now", "k", exchange="delayed")
    assert client.bodies("q") == [b"now"]
    client.advance(1.499)
    assert client.count("q") == 0
    client.advance(0.001)
    assert client.bodies("q") == [b"later"]


def test_delayed_messages_come_out_in_due_order() -> None:
    client = TimedClient()
    _delayed_fanout_to_q(client)
    for body, delay in ((b"3", 300), (b"1", 100), (b"2", 200)):
        client.publish(1, body, "", exchange="delayed", headers={"x-delay": delay})
    client.advance(1.0)
    assert client.bodies("q") == [b"1", b"2", b"3"]


def test_mandatory_publish_of_a_held_message_is_returned_as_the_plugin_does() -> None:
    client = TimedClient()
    _exchange(client, "delayed", "x-delayed-message", **{"x-delayed-type": "direct"})
    client.declare("q")
    client.send(1, commands.Queue.Bind(queue="q", exchange="delayed", routing_key="k"))
    client.send(1, commands.Basic.Publish(exchange="delayed", routing_key="k", mandatory=True))
    from pamqp import header
    from pamqp.body import ContentBody

    client.send(1, header.ContentHeader(0, 1, commands.Basic.Properties(headers={"x-delay": 10})))
    client.send(1, ContentBody(b"x"))
    assert any(isinstance(v, commands.Basic.Return) for _, v in client.received())
    client.advance(0.01)
    assert client.bodies("q") == [b"x"]


def test_deleting_a_delayed_exchange_drops_its_held_messages() -> None:
    client = TimedClient()
    _delayed_fanout_to_q(client)
    client.publish(1, b"x", "", exchange="delayed", headers={"x-delay": 100})
    client.send(1, commands.Exchange.Delete(exchange="delayed"))
    client.advance(1.0)
    assert client.count("q") == 0


def test_delayed_type_argument_is_required() -> None:
    client = TimedClient()
    client.send(1, commands.Exchange.Declare(exchange="d", exchange_type="x-delayed-message"))
    assert close_of(client.received()) == (
        1,
        406,
        "PRECONDITION_FAILED - Invalid argument, 'x-delayed-type' must be an existing exchange type",
    )


def _hash_setup(client: TimedClient, weights: dict[str, int], **arguments: Any) -> None:
    _exchange(client, "ch", "x-consistent-hash", **arguments)
    for queue, weight in weights.items():
        client.declare(queue)
        client.send(1, commands.Queue.Bind(queue=queue, exchange="ch", routing_key=str(weight)))
    client.received()


def _placement(client: TimedClient, queues: list[str]) -> dict[str, set[bytes]]:
    return {queue: set(client.bodies(queue)) for queue in queues}


def test_consistent_hash_places_each_key_on_one_queue_stably_and_by_weight() -> None:
    client = TimedClient()
    _hash_setup(client, {"a": 1, "b": 3})
    keys = [f"key-{n}" for n in range(400)]
    for key in keys:
        client.publish(1, key.encode(), key, exchange="ch")
    first = _placement(client, ["a", "b"])
    for key in keys:
        client.publish(1, key.encode(), key, exchange="ch")
    assert _placement(client, ["a", "b"]) == first
    assert first["a"].isdisjoint(first["b"])
    assert len(first["a"]) + len(first["b"]) == len(keys)
    assert len(first["b"]) > len(first["a"])  # weight 3 against 1


def test_consistent_hash_on_a_header() -> None:
    client = TimedClient()
    _hash_setup(client, {"a": 10, "b": 10}, **{"hash-header": "user"})
    for n in range(20):
        client.publish(1, str(n).encode(), f"random-{n}", exchange="ch", headers={"user": "alice"})
    counts = Counter(len(client.bodies(q)) for q in ("a", "b"))
    assert counts == Counter({20: 1, 0: 1})


def test_consistent_hash_on_message_id_property() -> None:
    client = TimedClient()
    _hash_setup(client, {"a": 10, "b": 10}, **{"hash-property": "message_id"})
    for n in range(20):
        client.publish(1, str(n).encode(), f"random-{n}", exchange="ch", message_id="same")
    assert sorted(len(client.bodies(q)) for q in ("a", "b")) == [0, 20]


def test_consistent_hash_refuses_a_non_integer_weight() -> None:
    client = TimedClient()
    _hash_setup(client, {})
    client.declare("q")
    client.send(1, commands.Queue.Bind(queue="q", exchange="ch", routing_key="heavy"))
    assert close_of(client.received())[1] == 406


def test_consistent_hash_rebinding_a_queue_adds_no_buckets_and_any_unbind_drops_them_all() -> None:
    client = TimedClient()
    _hash_setup(client, {"a": 5, "b": 5})
    client.send(1, commands.Queue.Bind(queue="a", exchange="ch", routing_key="50"))  # a keeps its 5 buckets
    client.send(1, commands.Queue.Unbind(queue="a", exchange="ch", routing_key="50"))
    client.received()
    for n in range(50):  # a's "5" binding remains, but it has no bucket left: everything goes to b
        client.publish(1, str(n).encode(), f"key-{n}", exchange="ch")
    assert (client.count("a"), client.count("b")) == (0, 50)


def test_consistent_hash_routes_a_message_without_the_hashed_header() -> None:
    client = TimedClient()
    _hash_setup(client, {"a": 1, "b": 1, "c": 1}, **{"hash-header": "user"})
    for n in range(9):
        client.publish(1, str(n).encode(), f"key-{n}", exchange="ch")  # hashed as the atom undefined
    assert sorted(client.count(q) for q in "abc") == [0, 0, 9]


def test_recent_history_replays_the_newest_messages_to_each_new_binding() -> None:
    client = TimedClient()
    _exchange(client, "rh", "x-recent-history", **{"x-recent-history-length": 3})
    for n in range(5):
        client.publish(1, f"m{n}".encode(), "k", exchange="rh")
    client.publish(1, b"secret", "k", exchange="rh", headers={"x-recent-history-no-store": True})
    client.declare("q")
    client.send(1, commands.Queue.Bind(queue="q", exchange="rh", routing_key="ignored"))
    client.received()
    assert client.bodies("q") == [b"m2", b"m3", b"m4"]
    client.publish(1, b"live", "other", exchange="rh")
    assert client.bodies("q") == [b"live"]


def test_recent_history_refuses_a_length_that_is_not_a_positive_integer() -> None:
    client = TimedClient()
    client.send(
        1,
        commands.Exchange.Declare(
            exchange="rh", exchange_type="x-recent-history", arguments={"x-recent-history-length": 0}
        ),
    )
    assert close_of(client.received()) == (
        1,
        406,
        "PRECONDITION_FAILED - Invalid argument 0, 'x-recent-history-length' must be a positive integer",
    )


def test_modulus_hash_sends_each_key_to_one_queue_stably() -> None:
    client = TimedClient()
    _exchange(client, "mod", "x-modulus-hash")
    for queue in ("a", "b", "c"):
        client.declare(queue)
        client.send(1, commands.Queue.Bind(queue=queue, exchange="mod", routing_key=queue))
    client.received()
    keys = [f"key-{n}" for n in range(60)]
    for key in keys * 2:
        client.publish(1, key.encode(), key, exchange="mod")
    placed = {q: client.bodies(q) for q in "abc"}
    assert sum(map(len, placed.values())) == 120
    for bodies in placed.values():  # both copies of a key in the same queue
        assert Counter(bodies) == Counter(dict.fromkeys(set(bodies), 2))
    assert all(placed.values())
