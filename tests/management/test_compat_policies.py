"""Differential: policies, operator policies, parameters, global parameters and limits against a private
RabbitMQ node (management plugin) and WarrenMQ: statuses, error bodies and values of the endpoints, and which
policy wins as clients see it (the messages a queue keeps under max-length, overflow and dead-lettering
from policies, arguments and operator policies)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import start_broker_process
from tests.management.http_differential import Pair, Step, body_of, key_set, send
from tests.management.rabbitmq_management_node import ManagementNode

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

V = "compat-pol"
U = "compat-pol-u"
POLICY = {"pattern": "^t", "definition": {"max-length": 7}, "priority": 1, "apply-to": "queues"}
MORE_INVALID: list[dict[str, Any]] = [
    {"pattern": "a", "definition": {"ha-mode": "nodes"}},
    {"pattern": "a", "definition": {"ha-mode": "all", "ha-sync-mode": "x"}},
    {"pattern": "a", "definition": {"ha-mode": "all", "ha-params": 2}},
    {"pattern": "a", "definition": {"ha-mode": "bogus"}},
    {"pattern": "a", "definition": {"max-length": -1, "expires": 0}},
]
SCENARIO = [
    Step("PUT", f"/api/vhosts/{V}"),
    Step("PUT", f"/api/users/{U}", {"password": "p", "tags": "management"}),
    Step("GET", f"/api/policies/{V}", values=("*",)),
    Step("PUT", f"/api/policies/{V}/pb", {**POLICY, "definition": {"max-length": 5}}),
    Step("PUT", f"/api/policies/{V}/pa", POLICY),
    Step("PUT", f"/api/policies/{V}/pa", POLICY),
    Step("PUT", f"/api/policies/{V}/low", {"pattern": "x", "definition": {"expires": 9}}),
    Step("PUT", f"/api/policies/{V}/Mid", {**POLICY, "priority": 1}),
    Step("GET", f"/api/policies/{V}", values=("*",)),
    Step("GET", f"/api/policies/{V}/pa", values=("*",)),
    Step("GET", f"/api/policies/{V}/nope", values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "(", "definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a"}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"foo": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"max-length": -1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"max-length": "x"}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"expires": 0}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"overflow": "no"}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": 1, "definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {**POLICY, "priority": "5"}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"ha-mode": "exactly"}},
         values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"dead-letter-exchange": 5}},
         values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"queue-leader-locator": "x"}},
         values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a[", "definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "*a", "definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a)", "definition": {"max-length": 1}}, values=("*",)),
    Step("PUT", f"/api/policies/{V}/bad", {"pattern": "a", "definition": {"ha-params": 2}}, values=("*",)),
    *(Step("PUT", f"/api/policies/{V}/bad", body, values=("*",)) for body in MORE_INVALID),
    Step("PUT", "/api/policies/compat-nov/p", POLICY, values=("*",)),
    Step("GET", f"/api/policies/{V}/bad", values=("*",)),
    Step("PUT", f"/api/operator-policies/{V}/op", {"pattern": "^t", "definition": {"max-length": 6}}),
    Step("GET", f"/api/operator-policies/{V}", values=("*",)),
    Step("PUT", f"/api/operator-policies/{V}/bad", {"pattern": "a", "definition": {"overflow": "drop-head"}},
         values=("*",)),
    Step("PUT", f"/api/operator-policies/{V}/op", {"pattern": "^t", "definition": {"max-length": 6}},
         user=(U, "p"), values=("*",)),
    Step("GET", f"/api/parameters/operator_policy/{V}", values=("*",)),
    Step("GET", f"/api/parameters/policy/{V}/pa", values=("*",)),
    Step("PUT", f"/api/parameters/federation-upstream/{V}/up", {"value": {"uri": "amqp://"}}, values=("*",)),
    Step("DELETE", f"/api/operator-policies/{V}/op"),
    Step("DELETE", f"/api/policies/{V}/pb"),
    Step("DELETE", f"/api/policies/{V}/pb", values=("*",)),
    Step("GET", f"/api/vhost-limits/{V}", values=("*",)),
    Step("PUT", f"/api/vhost-limits/{V}/max-connections", {"value": 5}),
    Step("PUT", f"/api/vhost-limits/{V}/max-queues", {"value": -1}),
    Step("GET", f"/api/vhost-limits/{V}", values=("*",)),
    Step("GET", f"/api/parameters/vhost-limits/{V}", values=("*",)),
    Step("PUT", f"/api/vhost-limits/{V}/max-queues", {"value": "x"}, values=("*",)),
    Step("PUT", f"/api/vhost-limits/{V}/max-foo", {"value": 3}, values=("*",)),
    Step("PUT", f"/api/vhost-limits/{V}/max-queues", {}, values=("*",)),
    Step("PUT", "/api/vhost-limits/compat-nov/max-queues", {"value": 1}, values=("*",)),
    Step("GET", f"/api/vhost-limits/{V}/max-queues"),
    Step("DELETE", f"/api/vhost-limits/{V}/max-queues"),
    Step("DELETE", f"/api/vhost-limits/{V}/max-connections"),
    Step("DELETE", f"/api/vhost-limits/{V}/max-connections"),
    Step("GET", f"/api/vhost-limits/{V}", values=("*",)),
    Step("PUT", f"/api/user-limits/{U}/max-connections", {"value": 5}),
    Step("PUT", f"/api/user-limits/{U}/max-channels", {"value": -1}),
    Step("GET", f"/api/user-limits/{U}", values=("*",)),
    Step("GET", f"/api/users/{U}", values=("limits",)),
    Step("PUT", f"/api/user-limits/{U}/max-foo", {"value": 1}, values=("*",)),
    Step("PUT", f"/api/user-limits/{U}/max-channels", {"value": "a"}, values=("*",)),
    Step("PUT", "/api/user-limits/compat-nouser/max-channels", {"value": 1}, values=("*",)),
    Step("GET", "/api/user-limits/compat-nouser", values=("*",)),
    Step("DELETE", f"/api/user-limits/{U}/max-channels"),
    Step("DELETE", f"/api/user-limits/{U}/max-channels"),
    Step("PUT", "/api/global-parameters/compat-g", {"value": {"a": 1}}),
    Step("PUT", "/api/global-parameters/compat-g", {"value": {"a": 2}}),
    Step("GET", "/api/global-parameters/compat-g", values=("*",)),
    Step("PUT", "/api/global-parameters/compat-g", {}, values=("*",)),
    Step("DELETE", "/api/global-parameters/compat-g"),
    Step("DELETE", "/api/global-parameters/compat-g", values=("*",)),
    Step("GET", "/api/global-parameters/compat-g", values=("*",)),
    Step("DELETE", f"/api/users/{U}"),
    Step("DELETE", f"/api/vhosts/{V}"),
]  # fmt: skip


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    node = ManagementNode(tmp_path_factory.mktemp("rabbitmq-policies"))
    node.start()
    warren = start_broker_process("--data-dir", "none")
    try:
        yield Pair(node, warren)
    finally:
        warren.stop()
        node.stop()


def test_the_policy_and_limit_endpoints_answer_as_rabbitmq_does(pair: Pair) -> None:
    bases = (pair.node.http_url, f"http://127.0.0.1:{pair.warren.management_port}")
    differences = []
    for step in SCENARIO:
        rabbit, warren = (send(base, step) for base in bases)
        where = f"{step.method} {step.path} {step.body}"
        if rabbit.status_code != warren.status_code:
            differences.append(
                f"{where}: status {rabbit.status_code} != {warren.status_code} ({warren.text[:200]})"
            )
            continue
        expected, actual = body_of(rabbit), body_of(warren)
        if step.keys and (missing := key_set(expected) - key_set(actual)):
            differences.append(f"{where}: keys missing {sorted(missing)}")
        if "*" in step.values and expected != actual:
            differences.append(f"{where}: body {expected!r} != {actual!r}")
        for key in (k for k in step.values if k != "*"):
            if (
                isinstance(expected, dict)
                and isinstance(actual, dict)
                and expected.get(key) != actual.get(key)
            ):
                differences.append(f"{where}: {key} {expected.get(key)!r} != {actual.get(key)!r}")
    assert differences == [], "\n".join(differences)


# Each case: policies and operator policies to set, the queue's arguments; 10 messages "0".."9" are published
# and what the queue keeps (and its DLX queue gets) must be the same on both brokers.
CASES: list[tuple[str, list[tuple[str, str, dict[str, Any]]], dict[str, Any]]] = [
    ("tie goes to the first name", [("policies", "pb", {"definition": {"max-length": 5}}),
                                    ("policies", "pa", {"definition": {"max-length": 7}})], {}),
    ("higher priority wins", [("policies", "pa", {"definition": {"max-length": 7}}),
                              ("policies", "zz", {"definition": {"max-length": 2}, "priority": 3})], {}),
    ("smaller argument wins", [("policies", "p", {"definition": {"max-length": 7}})], {"x-max-length": 3}),
    ("smaller policy wins", [("policies", "p", {"definition": {"max-length": 4}})], {"x-max-length": 9}),
    ("operator policy is stricter", [("policies", "p", {"definition": {"max-length": 6}}),
                                     ("operator-policies", "op", {"definition": {"max-length": 2}})], {}),
    ("operator policy alone", [("operator-policies", "op", {"definition": {"max-length": 3}})], {}),
    ("exchange-only policy is ignored", [("policies", "p", {"definition": {"max-length": 1},
                                                            "apply-to": "exchanges"})], {}),
    ("argument overflow wins on classic queues",
     [("policies", "p", {"definition": {"max-length": 3, "overflow": "reject-publish"}})],
     {"x-overflow": "drop-head"}),
    ("policy overflow applies without an argument",
     [("policies", "p", {"definition": {"max-length": 3, "overflow": "reject-publish"}})], {}),
    # (drop-head by policy over a reject-publish argument: RabbitMQ 3.10's quorum reject-publish admits one
    # message past the limit, which WarrenMQ does not copy; the arguments-only case differs the same way)
    ("policy overflow wins on quorum queues",
     [("policies", "p", {"definition": {"max-length": 3, "overflow": "drop-head"}})],
     {"x-overflow": "reject-publish", "x-queue-type": "quorum"}),
    ("smaller argument wins on quorum queues", [("policies", "p", {"definition": {"max-length": 7}})],
     {"x-max-length": 2, "x-queue-type": "quorum"}),
    ("policy dead-lettering",
     [("policies", "p", {"definition": {"max-length": 2, "dead-letter-exchange": "compat-dlx"}})], {}),
    ("argument dead-lettering wins",
     [("policies", "p", {"definition": {"max-length": 2, "dead-letter-exchange": "nowhere"}})],
     {"x-dead-letter-exchange": "compat-dlx"}),
]  # fmt: skip


def _http(base: str) -> Callable[..., requests.Response]:
    def call(method: str, path: str, body: Any = None) -> requests.Response:
        return requests.request(method, base + path, json=body, auth=("guest", "guest"), timeout=10)

    return call


def _outcome(amqp_port: int, http_base: str, case: tuple[str, list[Any], dict[str, Any]]) -> list[Any]:
    _, policies, arguments = case
    call = _http(http_base)
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", amqp_port, socket_timeout=5))
    channel = connection.channel()
    channel.exchange_declare("compat-dlx", "fanout")
    channel.queue_declare("compat-dead")
    channel.queue_bind("compat-dead", "compat-dlx")
    for kind, name, body in policies:
        assert call("PUT", f"/api/{kind}/%2F/{name}", {"pattern": "^t", **body}).status_code == 201
    # No wait: both brokers store a policy before they answer the PUT, and a queue declared after that takes
    # the policies in force at its declaration (RabbitMQ pushes a change asynchronously only to queues that
    # already exist, and t-q does not).
    channel.queue_declare("t-q", durable="x-queue-type" in arguments, arguments=arguments)
    channel.confirm_delivery()
    refused = 0
    for i in range(10):
        try:
            channel.basic_publish("", "t-q", str(i).encode())
        except pika.exceptions.NackError:
            refused += 1
    kept = _drain(channel, "t-q")
    dead = _drain(channel, "compat-dead")
    channel.queue_delete("t-q")
    channel.queue_delete("compat-dead")
    connection.close()
    for kind, name, _ in policies:
        call("DELETE", f"/api/{kind}/%2F/{name}")
    return [kept, dead, refused]


def _drain(channel: Any, queue: str) -> list[bytes]:
    ready = channel.queue_declare(queue, passive=True).method.message_count
    return [channel.basic_get(queue, auto_ack=True)[2] for _ in range(ready)]


def test_which_policy_applies_matches_rabbitmq(pair: Pair) -> None:
    warren_base = f"http://127.0.0.1:{pair.warren.management_port}"
    differences = []
    for case in CASES:
        expected = _outcome(pair.node.port, pair.node.http_url, case)
        actual = _outcome(pair.warren.port, warren_base, case)
        if expected != actual:
            differences.append(f"{case[0]}: RabbitMQ {expected} != WarrenMQ {actual}")
    assert differences == [], "\n".join(differences)


def test_queue_objects_show_the_same_policies(pair: Pair) -> None:
    bases = (pair.node.http_url, f"http://127.0.0.1:{pair.warren.management_port}")
    for base in bases:
        call = _http(base)
        call("PUT", "/api/policies/%2F/show", {"pattern": "^shown$", "definition": {"max-length": 9}})
        operator = {
            "pattern": "^shown",
            "definition": {"max-length": 4, "message-ttl": 50000},
            "apply-to": "queues",
        }
        call("PUT", "/api/operator-policies/%2F/show-op", operator)
        call("PUT", "/api/queues/%2F/shown", {"arguments": {}})
        call("PUT", "/api/queues/%2F/unshown", {"arguments": {}})
    keys = ("policy", "operator_policy", "effective_policy_definition")
    deadline = time.monotonic() + 20  # RabbitMQ's statistics refresh every 5 s
    while True:
        rabbit = [requests.get(f"{bases[0]}/api/queues/%2F/{q}", auth=("guest", "guest"), timeout=10).json()
                  for q in ("shown", "unshown")]  # fmt: skip
        if rabbit[0].get("policy") is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    warren = [requests.get(f"{bases[1]}/api/queues/%2F/{q}", auth=("guest", "guest"), timeout=10).json()
              for q in ("shown", "unshown")]  # fmt: skip
    assert [{k: q[k] for k in keys} for q in warren] == [{k: q[k] for k in keys} for q in rabbit]
    for base in bases:
        call = _http(base)
        for path in ("/api/queues/%2F/shown", "/api/queues/%2F/unshown", "/api/policies/%2F/show",
                     "/api/operator-policies/%2F/show-op"):  # fmt: skip
            call("DELETE", path)
