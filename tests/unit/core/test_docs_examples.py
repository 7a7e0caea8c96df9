"""Every routing example of RabbitMQ's docs, with the docs' answers.

Sources (rabbitmq/rabbitmq-website): tutorials/tutorial-three/four/five-python.md, docs/exchanges.md,
docs/e2e.md, docs/ae.md.
"""

from __future__ import annotations

from tests.unit.core.test_router import Topology


def test_tutorial_three_fanout_logs_reach_every_bound_queue() -> None:
    t = Topology()
    t.exchange("logs", "fanout")
    for queue in ("amq.gen-1", "amq.gen-2"):
        t.bind("logs", queue)  # the routing key is ignored by fanout
    assert t.publish("logs", "info: Hello World!") == ["amq.gen-1", "amq.gen-2"]
    assert t.publish("logs", "") == ["amq.gen-1", "amq.gen-2"]


def test_tutorial_three_fanout_with_no_queue_discards() -> None:
    t = Topology()
    t.exchange("logs", "fanout")
    assert t.publish("logs") == []


def test_tutorial_four_direct_exchange_x() -> None:
    # Q1 bound with "orange", Q2 with "black" and "green"; everything else is discarded.
    t = Topology()
    t.exchange("X", "direct")
    t.bind("X", "Q1", "orange")
    t.bind("X", "Q2", "black")
    t.bind("X", "Q2", "green")
    assert t.publish("X", "orange") == ["Q1"]
    assert t.publish("X", "black") == ["Q2"]
    assert t.publish("X", "green") == ["Q2"]
    assert t.publish("X", "purple") == []


def test_tutorial_four_multiple_bindings_make_direct_behave_like_fanout() -> None:
    t = Topology()
    t.exchange("X", "direct")
    t.bind("X", "Q1", "black")
    t.bind("X", "Q2", "black")
    assert t.publish("X", "black") == ["Q1", "Q2"]


def test_tutorial_four_severities() -> None:
    # receive_logs_direct.py warning error > logs_from_rabbit.log ; receive_logs_direct.py info warning error
    t = Topology()
    t.exchange("direct_logs", "direct")
    for severity in ("warning", "error"):
        t.bind("direct_logs", "disk", severity)
    for severity in ("info", "warning", "error"):
        t.bind("direct_logs", "screen", severity)
    assert t.publish("direct_logs", "error") == ["disk", "screen"]
    assert t.publish("direct_logs", "warning") == ["disk", "screen"]
    assert t.publish("direct_logs", "info") == ["screen"]
    assert t.publish("direct_logs", "debug") == []


def tutorial_five() -> Topology:
    t = Topology()
    t.exchange("topic_logs", "topic")
    t.bind("topic_logs", "Q1", "*.orange.*")
    t.bind("topic_logs", "Q2", "*.*.rabbit")
    t.bind("topic_logs", "Q2", "lazy.#")
    return t


def test_tutorial_five_animals() -> None:
    t = tutorial_five()
    answers = {
        "quick.orange.rabbit": ["Q1", "Q2"],  # both queues
        "lazy.orange.elephant": ["Q1", "Q2"],  # both of them
        "quick.orange.fox": ["Q1"],  # only the first queue
        "lazy.brown.fox": ["Q2"],  # only the second
        "lazy.pink.rabbit": ["Q2"],  # second queue only once, though it matches two bindings
        "quick.brown.fox": [],  # no binding: discarded
        "orange": [],  # one word: lost
        "quick.orange.new.rabbit": [],  # four words: lost
        "lazy.orange.new.rabbit": ["Q2"],  # four words, but matches the last binding
    }
    for key, queues in answers.items():
        assert sorted(map(str, t.publish("topic_logs", key))) == queues, key


def test_tutorial_five_hash_and_no_wildcards() -> None:
    # "When a queue is bound with # it will receive all the messages ... like in fanout"; without * and #
    # the topic exchange "will behave just like a direct one".
    t = Topology()
    t.exchange("topic_logs", "topic")
    t.bind("topic_logs", "all", "#")
    t.bind("topic_logs", "exact", "kern.critical")
    assert t.publish("topic_logs", "anything.at.all") == ["all"]
    assert t.publish("topic_logs", "") == ["all"]
    assert sorted(map(str, t.publish("topic_logs", "kern.critical"))) == ["all", "exact"]
    assert t.publish("topic_logs", "kern.critical.x") == ["all"]


def test_tutorial_five_receive_logs_topic_examples() -> None:
    t = Topology()
    t.exchange("topic_logs", "topic")
    t.bind("topic_logs", "kern", "kern.*")
    t.bind("topic_logs", "critical", "*.critical")
    t.bind("topic_logs", "both", "kern.*")
    t.bind("topic_logs", "both", "*.critical")
    assert sorted(map(str, t.publish("topic_logs", "kern.critical"))) == ["both", "critical", "kern"]
    assert sorted(map(str, t.publish("topic_logs", "kern.info"))) == ["both", "kern"]
    assert sorted(map(str, t.publish("topic_logs", "cron.critical"))) == ["both", "critical"]
    assert t.publish("topic_logs", "anonymous.info") == []


def test_exchanges_md_topic_examples() -> None:
    t = Topology()
    t.exchange("x", "topic")
    t.bind("x", "cities", "regions.na.cities.*")
    t.bind("x", "audit", "audit.events.#")
    assert t.publish("x", "regions.na.cities.toronto") == ["cities"]
    assert t.publish("x", "regions.na.cities.newyork") == ["cities"]
    assert t.publish("x", "regions.na.cities") == []  # '*' is exactly one segment
    assert t.publish("x", "audit.events.users.signup") == ["audit"]
    assert t.publish("x", "audit.events.orders.placed") == ["audit"]
    assert t.publish("x", "audit.users") == []


def test_exchanges_md_direct_and_default_examples() -> None:
    t = Topology()
    t.exchange("x", "direct")
    t.bind("x", "q", "abc")
    assert t.publish("x", "abc") == ["q"]  # "abc" and "abc" only
    assert t.publish("x", "abcd") == []
    assert t.publish("x", "ABC") == []
    # The default exchange: every queue is reachable by its name.
    t.queue("orders")
    assert t.publish("", "orders") == ["orders"]


def test_e2e_md_source_routes_through_destination_exchange() -> None:
    # ch.exchangeBind("destination", "source", "routingKey"): messages flow from source to destination, and
    # the destination's own type and bindings apply.
    t = Topology()
    t.exchange("source", "direct")
    t.exchange("destination", "topic")
    t.bind("source", "destination", "routingKey")
    t.bind("destination", "q", "routingKey")
    t.bind("destination", "other", "other.#")
    assert t.publish("source", "routingKey") == ["q"]
    assert t.publish("source", "other.x") == []  # the source's binding key does not match


def test_e2e_md_logging_topology_gives_each_queue_one_copy() -> None:
    # A log fan-in: app exchanges feed a central topic exchange; an archive queue is bound both directly and
    # through the hub; "each queue will receive exactly one copy of that message".
    t = Topology()
    t.exchange("app.logs", "fanout")
    t.exchange("hub", "topic")
    t.exchange("alerts", "direct")
    t.bind("app.logs", "hub")
    t.bind("hub", "alerts", "#")
    t.bind("hub", "archive", "#")
    t.bind("app.logs", "archive")
    t.bind("alerts", "pager", "app.error")
    assert sorted(map(str, t.publish("app.logs", "app.error"))) == ["archive", "pager"]
    assert t.publish("app.logs", "app.info") == ["archive"]


def test_e2e_md_cycles_are_detected_and_each_queue_gets_one_copy() -> None:
    # A presence-style mesh: every exchange bound to every other; a queue on each.
    t = Topology()
    names = ["presence.a", "presence.b", "presence.c"]
    for name in names:
        t.exchange(name, "fanout")
        t.bind(name, f"q.{name}")
    for source in names:
        for destination in names:
            if source != destination:
                t.bind(source, destination)
    for name in names:
        assert sorted(map(str, t.publish(name))) == sorted(f"q.{n}" for n in names)


def test_ae_md_example() -> None:
    # args.put("alternate-exchange", "my-ae"); my-direct (direct), my-ae (fanout); "routed" bound to my-direct
    # with key1, "unrouted" bound to my-ae.
    t = Topology()
    t.exchange("my-direct", "direct", **{"alternate-exchange": "my-ae"})
    t.exchange("my-ae", "fanout")
    t.bind("my-direct", "routed", "key1")
    t.bind("my-ae", "unrouted", "")
    assert t.publish("my-direct", "key1") == ["routed"]
    assert t.publish("my-direct", "key2") == ["unrouted"]


def test_ae_md_chain_stops_at_an_exchange_already_tried() -> None:
    # "until either the message is successfully routed, the end of the chain of AEs is reached, or an AE is
    # encountered which has already attempted to route the message."
    t = Topology()
    t.exchange("a", **{"alternate-exchange": "b"})
    t.exchange("b", **{"alternate-exchange": "c"})
    t.exchange("c", **{"alternate-exchange": "a"})
    assert t.publish("a", "k") == []
    t.bind("c", "last", "k")
    assert t.publish("a", "k") == ["last"]
    t.exchange(
        "d", **{"alternate-exchange": "missing"}
    )  # "If that AE does not exist then a warning is logged"
    assert t.publish("d", "k") == []
