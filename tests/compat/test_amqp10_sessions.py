"""AMQP 1.0 sessions and transactions at their limits, as RabbitMQ 4.0.5 answers them: a session per channel
up to the negotiated channel-max (session_max_per_connection 64, so channels 0..63), the user's max-channels
not applied to sessions, a begin on a channel in use, and a sender to the transaction coordinator (4.0.5 has
no AMQP 1.0 transactions). Each case runs on WarrenMQ under ``--profile rabbitmq-4.0`` and on the 4.0.5
node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from protocol.amqp10.condition import Error
from protocol.amqp10.performatives import Attach, Begin, Close, End, Open
from protocol.amqp10.terminus import Source
from protocol.amqp10.types import Described, Symbol, ULong
from tests.compat.amqp10_support import (
    BROKERS,
    RABBITMQ4,
    Item,
    RawClient,
    broker_http_url,
    broker_port,
    performatives,
    user_with_permissions,
)
from tests.compat.rabbitmq4_node import RabbitMQ4Node, image_problem
from tests.hardening.served import serve

pytestmark = pytest.mark.compat


@pytest.fixture(params=BROKERS)
def broker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def port(request: pytest.FixtureRequest, broker: str) -> int:
    return broker_port(request, broker)


def _begin(client: RawClient, channel: int) -> Item:
    """Begin a session on ``channel``; the first thing answered."""
    client.perform(Begin(next_outgoing_id=0, incoming_window=1000, outgoing_window=1000), channel)
    (answer,) = client.read_count(1)
    return answer


def _begun(answer: Item, channel: int) -> bool:
    return isinstance(answer, tuple) and answer[0] == channel and isinstance(answer[1], Begin)


def _open_with_channel_max(port: int, channel_max: int | None) -> tuple[RawClient, Open]:
    """A client logged in whose open asks for ``channel_max``, and the open the broker answered."""
    client = RawClient(port)
    client.authenticate()
    client.perform(Open(container_id="warrenmq-tests", hostname="vhost:/", channel_max=channel_max))
    _, opened = client.read_count(2)
    assert isinstance(opened, tuple), opened
    assert isinstance(opened[1], Open), opened
    return client, opened[1]


def test_64_sessions_then_a_channel_over_channel_max_closes_the_connection(port: int) -> None:
    client = RawClient(port)
    client.login()
    begun = [_begun(_begin(client, channel), channel) for channel in range(64)]
    over = performatives([_begin(client, 64)])
    client.close()
    assert all(begun)
    error = Error(
        condition=Symbol("amqp:connection:framing-error"),
        description="channel number (64) exceeds maximum channel number (63)",
    )
    assert over == [Close(error=error)]


def test_the_clients_smaller_channel_max_is_the_limit(port: int) -> None:
    client, _ = _open_with_channel_max(port, 3)
    assert _begun(_begin(client, 3), 3)
    over = performatives([_begin(client, 4)])
    client.close()
    error = Error(
        condition=Symbol("amqp:connection:framing-error"),
        description="channel number (4) exceeds maximum channel number (3)",
    )
    assert over == [Close(error=error)]


def test_the_users_max_channels_does_not_limit_sessions(request: pytest.FixtureRequest, broker: str) -> None:
    """4.0.5 counts no AMQP 1.0 session as a channel: a user limited to one channel begins three sessions."""
    port, api = broker_port(request, broker), broker_http_url(request, broker)
    with user_with_permissions(api, ".*", ".*", ".*") as user:
        limit = f"{api}/api/user-limits/{user}/max-channels"
        limited = requests.put(limit, json={"value": 1}, auth=("guest", "guest"), timeout=10)
        assert limited.status_code == 204
        client = RawClient(port)
        client.login(response=f"\0{user}\0pw".encode())
        begun = [_begun(_begin(client, channel), channel) for channel in range(3)]
        client.close()
    assert begun == [True, True, True]


def test_a_begin_on_a_channel_in_use_ends_that_session(port: int) -> None:
    client = RawClient(port)
    client.login()
    assert _begun(_begin(client, 0), 0)
    answer = _begin(client, 0)
    assert isinstance(answer, tuple), answer
    channel, ended, _ = answer
    # The channel is free again: a new session begins on it.
    again = _begun(_begin(client, 0), 0)
    client.close()
    assert channel == 0
    assert isinstance(ended, End), ended
    assert isinstance(ended.error, Error), ended
    assert ended.error.condition == "amqp:internal-error"
    # 4.0.5 describes the frame as an Erlang term ("Unexpected frame {'v1_0.begin',[...]}"); WarrenMQ in one
    # line.
    assert str(ended.error.description).startswith("Unexpected frame")
    assert again


@pytest.mark.parametrize("descriptor", [ULong(0x30), Symbol("amqp:coordinator:list")])
def test_a_sender_to_the_transaction_coordinator_ends_the_session(port: int, descriptor: object) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    coordinator = Described(descriptor, [[Symbol("amqp:local-transactions")]])
    client.perform(
        Attach(
            name="txn",
            handle=0,
            role=False,
            snd_settle_mode=0,
            rcv_settle_mode=0,
            source=Source(),
            target=coordinator,
            initial_delivery_count=0,
        )
    )
    answer = performatives(client.read_count(1))
    client.close()
    error = Error(condition=Symbol("amqp:not-implemented"), description="Transactions not supported")
    assert answer == [End(error=error)]


SESSION_MAX = "session_max_per_connection = 2\n"


@pytest.fixture(scope="module")
def two_sessions_port(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """A broker of this module's parameter with ``session_max_per_connection = 2`` in its rabbitmq.conf."""
    if request.param == RABBITMQ4:
        problem = image_problem()
        if problem is not None:
            pytest.skip(problem)
        node = RabbitMQ4Node(tmp_path_factory.mktemp("rabbitmq4-sessions"), extra_config=SESSION_MAX)
        node.start()
        try:
            yield node.port
        finally:
            node.stop()
        return
    served = serve(
        tmp_path_factory.mktemp("warrenmq-sessions"), SESSION_MAX, env={"WARRENMQ_PROFILE": "rabbitmq-4.0"}
    )
    try:
        yield served.port
    finally:
        served.stop()


@pytest.mark.parametrize("two_sessions_port", BROKERS, indirect=True)
def test_session_max_per_connection_from_rabbitmq_conf(two_sessions_port: int) -> None:
    """Two sessions: the open announces channel-max 1, and a begin on channel 2 closes the connection."""
    client, opened = _open_with_channel_max(two_sessions_port, None)
    begun = [_begun(_begin(client, channel), channel) for channel in range(2)]
    over = performatives([_begin(client, 2)])
    client.close()
    assert opened.channel_max == 1
    assert begun == [True, True]
    error = Error(
        condition=Symbol("amqp:connection:framing-error"),
        description="channel number (2) exceeds maximum channel number (1)",
    )
    assert over == [Close(error=error)]
