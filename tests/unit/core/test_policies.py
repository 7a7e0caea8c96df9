"""Policies in the core: validation texts, which policy applies (priority, ties, apply-to, queue type), the
operator-policy merge, arguments against policy per key, and live re-application to a running queue."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.broker import Broker
from broker.core.model.message import Message
from broker.core.policies.policies import Policy, PolicyError, effective_definition, parse_policy, select
from broker.core.policies.policy_apply import merge_settings
from broker.core.policies.runtime_parameters import ParameterError, RuntimeParameters
from broker.core.queues.queue_settings import PLAIN, QUORUM, compile_settings
from tests.unit.core.fakes import ManualLoop


def _policy(
    name: str, priority: int = 0, pattern: str = ".*", definition: dict[str, Any] | None = None
) -> Policy:
    body = {"pattern": pattern, "priority": priority, "definition": definition or {"max-length": 1}}
    return parse_policy("/", name, body)


@pytest.mark.parametrize(
    ("body", "reasons"),
    [
        ({"pattern": "(", "definition": {"max-length": 1}},
         ['pattern should be regular expression but is invalid: {"missing )",1}']),
        ({"pattern": "a", "definition": {"foo": 1}}, ['[{<<"foo">>,1}] are not recognised policy settings']),
        ({"pattern": "a", "definition": {"max-length": -1}}, ["-1 is not a valid maximum length"]),
        ({"pattern": "a", "definition": {"max-length": 1.5}}, ["1.5 is not a valid maximum length"]),
        ({"pattern": "a", "definition": {"expires": 0}}, ["0 is not a valid queue expiry"]),
        ({"pattern": "a", "definition": {"overflow": "nope"}}, ['<<"nope">> is not a valid overflow value']),
        ({"pattern": "a", "definition": {"dead-letter-exchange": 5}},
         ["5 is not a valid dead letter exchange name"]),
        ({"pattern": "a", "definition": {}}, ["no policy provided"]),
        ({"pattern": "a", "definition": {"ha-mode": "exactly"}},
         ['ha-mode="exactly" takes an integer, none given']),
        ({"pattern": "a", "definition": {"max-length": 1}, "priority": "5"},
         ['priority should be a number, actually was <<"5">>']),
        ({"pattern": 1, "definition": {"max-length": 1}}, ["pattern should be a binary but was 1"]),
        (
            {"pattern": "a)", "definition": {"max-length": 1}},
            [
                'pattern should be regular expression but is invalid: {"unmatched parentheses",\n'
                + " " * 54
                + "1}"
            ],
        ),
        (
            {"pattern": "a", "definition": {"ha-sync-mode": "manual"}},
            ["ha-mode must be specified to specify ha-params, ha-sync-mode or ha-promote-on-shutdown"],
        ),
        # several errors: definition first, as rabbit_parameter_validation:proplist accumulates them
        ({"pattern": "a", "definition": {"max-age": "1Q"}, "apply-to": "x"},
         ['<<"1Q">> is not a valid max age',
          "apply-to 'x' unrecognised; should be one of: 'queues', 'classic_queues',  'quorum_queues', "
          "'streams', 'exchanges', or 'all'"]),
    ],
)  # fmt: skip
def test_invalid_policies_are_refused_with_rabbitmqs_reasons(
    body: dict[str, Any], reasons: list[str]
) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy("/", "p", body)
    assert raised.value.reasons == reasons


def test_operator_policies_take_only_the_numeric_limits() -> None:
    parse_policy("/", "op", {"pattern": "a", "definition": {"max-length": 1, "expires": 5}}, operator=True)
    with pytest.raises(PolicyError) as raised:
        parse_policy("/", "op", {"pattern": "a", "definition": {"overflow": "drop-head"}}, operator=True)
    assert raised.value.reasons == ['[{<<"overflow">>,<<"drop-head">>}] are not recognised policy settings']


def test_the_highest_priority_wins_and_ties_go_to_the_first_name_in_byte_order() -> None:
    policies = [_policy("zeta", 2), _policy("beta", 2), _policy("Mid", 2), _policy("top", 1)]
    chosen = select(policies, "queue", "q")
    assert chosen is not None
    assert chosen.name == "Mid"
    assert select([*policies, _policy("high", 3, pattern="^q$")], "queue", "q").name == "high"  # type: ignore[union-attr]


def test_apply_to_and_the_queue_type_decide_what_a_policy_covers() -> None:
    exchanges_only = parse_policy("/", "x", {"pattern": "", "definition": {"alternate-exchange": "ae"},
                                             "apply-to": "exchanges"})  # fmt: skip
    quorum_only = parse_policy("/", "qq", {"pattern": "", "definition": {"max-length": 1},
                                           "apply-to": "quorum_queues"})  # fmt: skip
    delivery_limit = _policy("dl", 0, definition={"delivery-limit": 3})
    assert exchanges_only.matches("exchange", "e")
    assert not exchanges_only.matches("queue", "q")
    assert quorum_only.matches("queue", "q", QUORUM)
    assert not quorum_only.matches("queue", "q")
    # A key the queue type does not support keeps the whole policy off it (3.13's unsupported_policies).
    assert delivery_limit.matches("queue", "q", QUORUM)
    assert not delivery_limit.matches("queue", "q")


def test_the_pattern_is_matched_unanchored() -> None:
    assert _policy("p", pattern="b").matches("queue", "abc")
    assert not _policy("p", pattern="^b").matches("queue", "abc")


def test_operator_policy_takes_the_smaller_limit_and_adds_its_keys() -> None:
    policy = _policy("p", definition={"max-length": 10, "dead-letter-exchange": "dlx"})
    operator = parse_policy(
        "/", "op", {"pattern": "", "definition": {"max-length": 6, "message-ttl": 5}}, True
    )
    assert effective_definition(policy, operator) == {
        "dead-letter-exchange": "dlx",
        "max-length": 6,
        "message-ttl": 5,
    }
    assert effective_definition(None, None) is None


@given(
    policy_value=st.integers(min_value=0, max_value=10**6),
    operator_value=st.integers(min_value=0, max_value=10**6),
    key=st.sampled_from(["max-length", "max-length-bytes", "message-ttl", "expires", "delivery-limit"]),
)
def test_the_merged_limit_is_never_looser_than_either(
    policy_value: int, operator_value: int, key: str
) -> None:
    policy = _policy("p", definition={key: policy_value or 1})
    operator = parse_policy("/", "op", {"pattern": "", "definition": {key: operator_value or 1}}, True)
    merged = effective_definition(policy, operator)
    assert merged is not None
    assert merged[key] == min(policy_value or 1, operator_value or 1)


@given(
    names=st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=8, unique=True),
    priorities=st.lists(st.integers(min_value=-3, max_value=3), min_size=8, max_size=8),
)
def test_select_agrees_with_a_sort_by_priority_then_name(names: list[str], priorities: list[int]) -> None:
    policies = [_policy(name, priority) for name, priority in zip(names, priorities, strict=False)]
    expected = sorted(policies, key=lambda p: (-p.priority, p.name.encode()))[0]
    assert select(reversed(policies), "queue", "anything") == expected


def _settings(args: dict[str, Any], queue_type: str = "classic") -> Any:
    if queue_type != "classic":
        args = {**args, "x-queue-type": queue_type}
    return compile_settings("q", "/", args, queue_type != "classic", False, False, False)


@given(arg=st.one_of(st.none(), st.integers(0, 100)), pol=st.integers(0, 100))
def test_limits_take_the_smaller_of_argument_and_policy(arg: int | None, pol: int) -> None:
    args = {} if arg is None else {"x-max-length": arg, "x-message-ttl": arg}
    merged = merge_settings(_settings(args), args, {"max-length": pol, "message-ttl": pol})
    expected = pol if arg is None else min(arg, pol)
    assert (merged.max_length, merged.message_ttl) == (expected, expected)


def test_the_argument_wins_for_dead_lettering_and_classic_overflow_but_policy_overflow_wins_on_quorum() -> (
    None
):
    args = {"x-dead-letter-exchange": "mine", "x-overflow": "reject-publish"}
    definition = {"dead-letter-exchange": "theirs", "overflow": "drop-head", "dead-letter-routing-key": "k"}
    classic = merge_settings(_settings(args), args, definition)
    assert (classic.dead_letter_exchange, classic.overflow) == ("mine", "reject-publish")
    assert classic.dead_letter_routing_key == "k"
    quorum = merge_settings(_settings(args, QUORUM), args, definition)
    assert (quorum.dead_letter_exchange, quorum.overflow) == ("mine", "drop-head")
    assert merge_settings(PLAIN, {}, {}) is PLAIN


def _broker(loop: ManualLoop) -> Broker:
    return Broker(loop.call_soon)


def test_a_policy_applied_to_a_running_queue_drops_the_head_at_once_and_clearing_it_lifts_the_limit() -> None:
    loop = ManualLoop()
    broker = _broker(loop)
    vhost = broker.vhosts["/"]
    queue = vhost.declare_queue("q", None)
    for i in range(5):
        vhost.publish("", Message("", "q", b"", b"m%d" % i))
    broker.put_policy(parse_policy("/", "cap", {"pattern": "^q$", "definition": {"max-length": 2}}))
    assert [e.message.body for e in queue.ready] == [b"m3", b"m4"]
    assert queue.policy is not None
    assert queue.policy.name == "cap"
    broker.delete_policy("/", "cap")
    for i in range(3):
        vhost.publish("", Message("", "q", b"", b"n%d" % i))
    assert len(queue.ready) == 5
    assert queue.policy is None


def test_a_new_queue_and_exchange_get_the_policy_that_matches_them() -> None:
    loop = ManualLoop()
    broker = _broker(loop)
    broker.put_policy(parse_policy("/", "ae", {"pattern": "^x", "definition": {"alternate-exchange": "alt"}}))
    broker.put_policy(parse_policy("/", "ttl", {"pattern": "^q", "definition": {"message-ttl": 0},
                                                "apply-to": "queues", "priority": 1}))  # fmt: skip
    vhost = broker.vhosts["/"]
    exchange = vhost.declare_exchange("x1", "direct")
    queue = vhost.declare_queue("q1", None)
    assert exchange.alternate_exchange == "alt"
    assert exchange.policy.name == "ae"
    assert queue.features is not None
    assert queue.features.settings.message_ttl == 0


def test_limit_values_are_checked_with_rabbitmqs_texts() -> None:
    parameters = RuntimeParameters()
    parameters.set_vhost_limit("/", "max-queues", 3)
    parameters.set_vhost_limit("/", "max-connections", -1)
    assert parameters.vhost_limit("/", "max-queues") == 3
    assert parameters.vhost_limit("/", "max-connections") is None  # negative: no limit
    with pytest.raises(ParameterError) as raised:
        parameters.set_vhost_limit("/", "max-queues", "x")
    assert raised.value.reason == 'max-queues should be a number, actually was <<"x">>'
    with pytest.raises(ParameterError) as raised:
        parameters.set_vhost_limit("/", "max-foo", 3)
    assert raised.value.reason == 'Unrecognised terms [{<<"max-foo">>,3}] in limits'
