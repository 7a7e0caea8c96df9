"""Every row of the version-profile table (broker.core.model.profile) under every profile."""

from __future__ import annotations

import argparse

import pytest
from pamqp import commands

from broker.config import add_serve_arguments, config_from_args
from broker.core.model.profile import PROFILES, Profile
from tests.component.features import TimedClient
from tests.component.harness import close_of

ALL = sorted(PROFILES)
MIB = 1024 * 1024


def _config(*argv: str) -> object:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(list(argv)))


def test_the_default_profile_is_rabbitmq_3_13() -> None:
    config = _config()
    assert config.profile.name == "rabbitmq-3.13"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("rabbitmq-3.13", 128 * MIB), ("rabbitmq-4.0", 16 * MIB), ("rabbitmq-4.3", 16 * MIB)],
)
def test_max_message_size_follows_the_profile_unless_set(name: str, expected: int) -> None:
    assert _config("--profile", name).session.max_message_size == expected  # type: ignore[attr-defined]
    explicit = _config("--profile", name, "--max-message-size", "1000")
    assert explicit.session.max_message_size == 1000  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "expected"), [("rabbitmq-3.13", 4096), ("rabbitmq-4.0", 4096), ("rabbitmq-4.3", 8192)]
)
def test_pre_auth_frame_max_follows_the_profile(name: str, expected: int) -> None:
    assert _config("--profile", name).session.pre_auth_frame_max == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "per_channel"), [("rabbitmq-3.13", True), ("rabbitmq-4.0", True), ("rabbitmq-4.3", False)]
)
def test_global_qos_is_per_channel_until_4_3_which_treats_it_as_per_consumer(
    name: str, per_channel: bool
) -> None:
    client = TimedClient(PROFILES[name])
    client.declare("a", durable=True)
    client.declare("b", durable=True)
    client.send(1, commands.Basic.Qos(prefetch_count=1, global_=True))
    client.send(1, commands.Basic.Consume(queue="a", consumer_tag="ca"))
    client.send(1, commands.Basic.Consume(queue="b", consumer_tag="cb"))
    client.received()
    client.publish(1, b"1", "a")
    client.publish(1, b"2", "b")
    # Per channel: one unacked message in total; per consumer (prefetch applies to none): both delivered.
    assert len(client.deliveries()) == (1 if per_channel else 2)


@pytest.mark.parametrize("name", ALL)
def test_transient_non_exclusive_queues_are_refused_with_541_only_under_4_3(name: str) -> None:
    client = TimedClient(PROFILES[name])
    client.send(1, commands.Queue.Declare(queue="durable", durable=True))
    client.send(1, commands.Queue.Declare(queue="exclusive", exclusive=True))
    client.send(1, commands.Queue.Declare(queue="transient"))
    frames = client.received()
    if PROFILES[name].transient_nonexclusive_queues:
        assert sum(isinstance(value, commands.Queue.DeclareOk) for _, value in frames) == 3
    else:
        channel, code, text = close_of(frames)
        assert (channel, code) == (0, 541)
        assert text.startswith("INTERNAL_ERROR - Feature `transient_nonexcl_queues` is deprecated.")


@pytest.mark.parametrize("name", ALL)
def test_x_queue_mode_is_accepted_and_ignored_until_4_3(name: str) -> None:
    client = TimedClient(PROFILES[name])
    client.send(1, commands.Queue.Declare(queue="q", durable=True, arguments={"x-queue-mode": "lazy"}))
    frames = client.received()
    if PROFILES[name].queue_mode_allowed:
        assert isinstance(frames[-1][1], commands.Queue.DeclareOk)
    else:
        assert close_of(frames) == (
            1,
            406,
            "PRECONDITION_FAILED - invalid arg 'x-queue-mode' for queue 'q' in vhost '/' of queue type "
            "rabbit_classic_queue",
        )


@pytest.mark.parametrize(
    ("name", "limit"), [("rabbitmq-3.13", None), ("rabbitmq-4.0", 20), ("rabbitmq-4.3", 20)]
)
def test_quorum_delivery_limit_default(name: str, limit: int | None) -> None:
    client = TimedClient(PROFILES[name])
    client.declare("qq", durable=True, **{"x-queue-type": "quorum"})
    features = client.broker.vhosts["/"].queues["qq"].features
    assert features is not None
    assert features.settings.delivery_limit == limit


def test_every_profile_row_is_covered_by_a_test() -> None:
    rows = set(Profile._fields) - {"name"}
    tested = {
        "max_message_size",
        "pre_auth_frame_max",
        "global_qos",
        "transient_nonexclusive_queues",
        "queue_mode_allowed",
        "quorum_delivery_limit",
        "consumer_timeout_classic",  # tests/component/test_ack_timeout.py, under each profile
        "rabbitmq_version",  # server-properties: tests/unit/config, tests/integration/test_image_config.py
        # tests/unit/core/test_consistent_hash.py; rabbitmq-3.10 against the oracle in
        # tests/compat/test_plugin_exchanges.py
        "hash_header_typed_pair",
        "reply_to_v1_decoding",  # tests/component/test_direct_reply_names.py, under each profile
        # connection.start and ANONYMOUS logins: tests/compat/frames/scenarios_preauth.py against 3.10 and
        # 4.0; the 4.3 profile against 4.0.5 in tests/compat/test_sasl_offer_43.py
        "sasl_mechanisms",
        # tests/compat/scenarios/streams.py (stream_refused_operations) against 3.10 and 4.0
        "stream_consume_names_stream_queue",
        # AMQP 1.0 on the AMQP port: tests/compat/test_amqp10_connection.py under rabbitmq-4.0 against 4.0.5,
        # and its refusal (the 0-9-1 header back) under the default 3.13 profile
        "amqp10",
        # tests/integration/test_rabbitmq4_settle_rules.py, and the scenarios dead_letter_x_death and
        # stream_refused_operations of tests/compat/test_differential.py against 3.10 and 4.0
        "dead_letter_keeps_cc",
        "stream_settle_any_outcome",
        # tests/management/test_compat_http_40.py against 4.0.5 (and tests/management/test_compat_http.py
        # against 3.10 for the 3.x shape); tests/compat/test_refusals_40.py for the AMQP 403 texts
        "queue_type_in_arguments",
        "management_4x",
        "permission_in_refusals",
        # an offset past a stream's tail: tests/compat/test_stream_offsets.py against 3.10 (starts at the
        # tail) and tests/compat/test_amqp10_streams.py against 4.0.5 (waits for it)
        "stream_offset_past_tail_waits",
        # tests/compat/test_quorum_delivery_count.py against 3.10 and 4.0
        "quorum_get_counts_from_zero",
    }
    assert rows == tested
