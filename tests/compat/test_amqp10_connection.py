"""AMQP 1.0 on the AMQP port, selected by the protocol header, and its SASL layer and open: WarrenMQ under
``--profile rabbitmq-4.0`` and RabbitMQ 4.0.5 (the oracle, skipped with the reason when podman or its image is
missing) answer the same octets; the expected values are the oracle's, so WarrenMQ is held to them even
where the oracle cannot run."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest
import requests
from proton import ConnectionException, Delivery, Message
from proton.utils import BlockingConnection, SendException

from protocol.amqp10.condition import Error
from protocol.amqp10.frames import AMQP_HEADER, SASL_HEADER, ProtocolHeader
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Begin, Close, End, Open, Transfer
from protocol.amqp10.sasl import SaslInit, SaslMechanisms, SaslOutcome
from protocol.amqp10.sections import Data, Properties
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Symbol
from tests.compat.amqp10_support import (
    BROKERS,
    EOF_,
    RABBITMQ4,
    RESET,
    RawClient,
    broker_http_url,
    broker_port,
    performatives,
    pika_channel,
    proton_url,
    user_with_permissions,
)

pytestmark = pytest.mark.compat

MECHANISMS = (Symbol("PLAIN"), Symbol("AMQPLAIN"), Symbol("ANONYMOUS"))


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.mark.parametrize("protocol_id", [0, 1, 2])
def test_amqp10_header_without_sasl_gets_the_sasl_header_and_a_reset(port: int, protocol_id: int) -> None:
    """RabbitMQ 4 requires SASL: any other 1.0 protocol ID is answered with the SASL header, then a reset."""
    client = RawClient(port)
    client.send(b"AMQP" + bytes([protocol_id, 1, 0, 0]))
    items = client.read_until(lambda items: bool(items) and items[-1] == RESET)
    client.close()
    assert items == [ProtocolHeader(SASL_HEADER), RESET]


def test_sasl_header_gets_the_mechanisms(port: int) -> None:
    client = RawClient(port)
    client.send(SASL_HEADER)
    items = client.read_count(2)
    client.close()
    header, mechanisms = items
    assert header == ProtocolHeader(SASL_HEADER)
    assert isinstance(mechanisms, SaslMechanisms)
    # The same three; their order comes from RabbitMQ's mechanism registry, which differs between boots of
    # one 4.0.5 node (its 0-9-1 connection.start has shown both "ANONYMOUS PLAIN AMQPLAIN" and "ANONYMOUS
    # AMQPLAIN PLAIN"): WarrenMQ sends the order seen most.
    assert sorted(mechanisms.sasl_server_mechanisms) == sorted(MECHANISMS)


def test_amqp091_header_still_gets_connection_start(port: int) -> None:
    """The 0-9-1 path is unchanged on the same port: connection.start (frame type 1, class 10 method 10)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        received = b""
        deadline = time.monotonic() + 10
        while len(received) < 11 and time.monotonic() < deadline:
            received += sock.recv(4096)
    assert received[:1] == b"\x01"
    assert received[7:11] == b"\x00\x0a\x00\x0a"


@pytest.mark.parametrize("mechanism", ["PLAIN", "ANONYMOUS"])
def test_login_open_begin_end_close(port: int, mechanism: str) -> None:
    client = RawClient(port)
    client.login(mechanism, b"\0guest\0guest" if mechanism == "PLAIN" else b"")
    begun = client.begin(3)
    assert begun == Begin(
        remote_channel=3,
        next_outgoing_id=2**32 - 4,
        incoming_window=400,
        outgoing_window=2**32 - 1,
        handle_max=255,
    )
    client.perform(End(), 3)
    assert performatives(client.read_count(1)) == [End()]
    client.perform(Close())
    assert performatives(client.read_count(1)) == [Close()]
    client.close()


def test_open_answer(port: int) -> None:
    client = RawClient(port)
    client.authenticate()
    client.perform(Open(container_id="c", hostname="vhost:/"))
    opened = performatives(client.read_count(2))[0]
    client.close()
    assert isinstance(opened, Open)
    assert (opened.max_frame_size, opened.channel_max, opened.idle_time_out) == (131072, 63, 30000)
    assert opened.offered_capabilities == (Symbol("LINK_PAIR_V1_0"), Symbol("ANONYMOUS-RELAY"))
    properties = opened.properties or {}
    assert properties[Symbol("product")] == "RabbitMQ"
    assert properties[Symbol("version")].startswith("4.0.")


def test_bad_password_is_refused_after_three_seconds_then_reset(port: int) -> None:
    """rabbit_amqp_reader sends sasl-outcome auth 3 s after the sasl-init, and resets the socket 3 s later."""
    client = RawClient(port)
    client.send(SASL_HEADER)
    client.read_count(2)
    started = time.monotonic()
    client.sasl(SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0guest\0wrong"))
    (outcome,) = client.read_count(1)
    took_s = time.monotonic() - started
    rest = client.read_until(lambda items: bool(items) and items[-1] == RESET)
    client.close()
    assert isinstance(outcome, SaslOutcome)
    assert outcome.code == 1
    assert 2.5 < took_s < 5.0
    assert rest == [RESET]


def test_proton_refused_with_bad_credentials(port: int) -> None:
    with pytest.raises(ConnectionException):
        BlockingConnection(proton_url(port, password="wrong"), timeout=15)


def test_proton_connects_and_publishes(port: int) -> None:
    """A publish through amq.fanout with no queue bound comes back released (unroutable)."""
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        sender = connection.create_sender("/exchanges/amq.fanout")
        with pytest.raises(SendException) as raised:
            sender.send(Message(body="hello"))
        assert raised.value.state == Delivery.RELEASED
    finally:
        connection.close()


def test_amqp10_header_on_a_3x_profile_gets_the_amqp091_header(amqp_url: str) -> None:
    """Under a 3.x profile (the default, 3.13) AMQP 1.0 is not spoken, as on a 3.x node without the
    rabbitmq_amqp1_0 plugin: the header is refused with 0-9-1's (spec 4.2.2) and the socket closed."""
    from urllib.parse import urlparse

    parsed = urlparse(amqp_url)
    with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 5672), timeout=10) as sock:
        sock.sendall(SASL_HEADER)
        received = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            data = sock.recv(4096)
            if not data:
                break
            received += data
    assert received == b"AMQP\x00\x00\x09\x01"


@pytest.mark.parametrize("which", BROKERS)
def test_management_lists_amqp10_connections(request: pytest.FixtureRequest, which: str) -> None:
    port = broker_port(request, which)
    api = broker_http_url(request, which)
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        listed: list[dict[str, object]] = []
        deadline = time.monotonic() + 20  # 4.0.5 lists a connection once its first stats are emitted (5 s)
        while not listed and time.monotonic() < deadline:
            rows = requests.get(f"{api}/api/connections", auth=("guest", "guest"), timeout=10).json()
            listed = [row for row in rows if row.get("protocol") == "AMQP 1-0"]
            if not listed:
                time.sleep(0.2)
    finally:
        connection.close()
    assert len(listed) == 1
    row = listed[0]
    assert set(row) == LISTED_KEYS
    assert {key: row[key] for key in ("auth_mechanism", "channel_max", "user", "vhost", "type", "ssl")} == {
        "auth_mechanism": "PLAIN",
        "channel_max": 63,
        "user": "guest",
        "vhost": "/",
        "type": "network",
        "ssl": False,
    }
    assert row["port"] == port


# The keys RabbitMQ 4.0.5's /api/connections shows for an AMQP 1.0 connection.
LISTED_KEYS = {
    "auth_mechanism",
    "channel_max",
    "client_properties",
    "connected_at",
    "frame_max",
    "host",
    "name",
    "node",
    "peer_cert_issuer",
    "peer_cert_subject",
    "peer_cert_validity",
    "peer_host",
    "peer_port",
    "port",
    "protocol",
    "ssl",
    "ssl_cipher",
    "ssl_hash",
    "ssl_key_exchange",
    "ssl_protocol",
    "timeout",
    "type",
    "user",
    "vhost",
}


@pytest.fixture
def limited_user(request: pytest.FixtureRequest, which: str) -> Iterator[str]:
    """A user who may configure everything on / but write nowhere and read nothing."""
    with user_with_permissions(broker_http_url(request, which), ".*", "^$", "^$") as name:
        yield name


def _refused(client: RawClient, attach: Attach, transfer: bytes | None = None) -> list[object]:
    client.login(response=b"\0" + client.user.encode() + b"\0pw")
    client.begin()
    client.perform(attach)
    if transfer is None:
        return list(performatives(client.read_count(1)))
    client.read_count(2)
    client.perform(Transfer(handle=0, delivery_id=0, delivery_tag=b"0", message_format=0), payload=transfer)
    return list(performatives(client.read_count(1)))


@pytest.mark.parametrize("which", BROKERS)
def test_permissions_refused_end_the_session(
    request: pytest.FixtureRequest, which: str, limited_user: str
) -> None:
    port = broker_port(request, which)
    queue = f"amqp10-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(queue, auto_delete=True)
    to_fanout = encode_sections([Properties(to="/exchanges/amq.fanout"), Data(b"x")])
    cases: list[tuple[Attach, bytes | None]] = [
        (_sender(Target(address="/exchanges/amq.fanout")), None),
        (_sender(Target()), to_fanout),
        (
            Attach(name="r", handle=0, role=True, source=Source(address=f"/queues/{queue}"), target=Target()),
            None,
        ),
    ]
    ended = []
    for attach, transfer in cases:
        client = RawClient(port)
        client.user = limited_user
        ended += _refused(client, attach, transfer)
        client.close()
    channel.connection.close()
    refused = "{} access to {} '{}' in vhost '/' refused for user '" + limited_user + "'"
    unauthorized = Symbol("amqp:unauthorized-access")
    write = refused.format("write", "exchange", "amq.fanout")
    assert ended == [
        End(error=Error(condition=unauthorized, description=write)),
        End(error=Error(condition=unauthorized, description=write)),
        End(error=Error(condition=unauthorized, description=refused.format("read", "queue", queue))),
    ]


def _sender(target: Target) -> Attach:
    return Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target)


def test_open_of_a_missing_vhost_is_reset(port: int) -> None:
    """4.0.5 answers an open naming a vhost that does not exist with neither open nor close: a reset."""
    client = RawClient(port)
    client.authenticate()
    client.perform(Open(container_id="c", hostname="vhost:no-such-vhost"))
    items = client.read_until(lambda items: bool(items) and items[-1] == RESET)
    client.close()
    assert items == [ProtocolHeader(AMQP_HEADER), RESET]


@pytest.mark.parametrize("which", BROKERS)
def test_deleting_the_vhost_closes_its_amqp10_connections(request: pytest.FixtureRequest, which: str) -> None:
    port = broker_port(request, which)
    api = broker_http_url(request, which)
    auth = ("guest", "guest")
    vhost = f"amqp10-{uuid.uuid4().hex[:8]}"
    requests.put(f"{api}/api/vhosts/{vhost}", auth=auth, timeout=10)
    permissions = {"configure": ".*", "write": ".*", "read": ".*"}
    requests.put(f"{api}/api/permissions/{vhost}/guest", json=permissions, auth=auth, timeout=10)
    client = RawClient(port)
    client.login(hostname=f"vhost:{vhost}")
    requests.delete(f"{api}/api/vhosts/{vhost}", auth=auth, timeout=10)
    items = client.read_until(lambda items: bool(items) and items[-1] in (EOF_, RESET), deadline_s=15)
    client.close()
    # 4.0.5 races its own vhost supervisor: the connection is closed "is deleted" or, when the vhost's
    # processes stopped first, "is down" (seen under load); WarrenMQ says what happened, "is deleted".
    reasons = ("is deleted", "is down") if which == RABBITMQ4 else ("is deleted",)
    assert [p for p in performatives(items) if isinstance(p, Close)] in [
        [
            Close(
                error=Error(
                    condition=Symbol("amqp:internal-error"),
                    description=f"Connection forced: \"vhost '{vhost}' {reason}\"",
                )
            )
        ]
        for reason in reasons
    ]


@pytest.mark.parametrize("which", BROKERS)
def test_vhost_connection_limit(request: pytest.FixtureRequest, which: str) -> None:
    port = broker_port(request, which)
    api = broker_http_url(request, which)
    auth = ("guest", "guest")
    vhost = f"amqp10-limit-{uuid.uuid4().hex[:8]}"
    requests.put(f"{api}/api/vhosts/{vhost}", auth=auth, timeout=10)
    permissions = {"configure": ".*", "write": ".*", "read": ".*"}
    requests.put(f"{api}/api/permissions/{vhost}/guest", json=permissions, auth=auth, timeout=10)
    requests.put(f"{api}/api/vhost-limits/{vhost}/max-connections", json={"value": 0}, auth=auth, timeout=10)
    try:
        client = RawClient(port)
        client.authenticate()
        client.perform(Open(container_id="c", hostname=f"vhost:{vhost}"))
        items = client.read_until(lambda items: bool(items) and items[-1] in (EOF_, RESET))
        client.close()
    finally:
        requests.delete(f"{api}/api/vhosts/{vhost}", auth=auth, timeout=10)
    assert items == [ProtocolHeader(AMQP_HEADER), RESET]


@pytest.mark.parametrize("which", BROKERS)
def test_management_lists_amqp10_consumers(request: pytest.FixtureRequest, which: str) -> None:
    port = broker_port(request, which)
    api = broker_http_url(request, which)
    queue = f"amqp10-c-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(queue)
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        connection.create_receiver(f"/queues/{queue}", credit=5)
        listed: list[dict[str, object]] = []
        deadline = time.monotonic() + 20  # 4.0.5 lists a consumer once its stats are emitted
        while not listed and time.monotonic() < deadline:
            rows = requests.get(f"{api}/api/consumers", auth=("guest", "guest"), timeout=10).json()
            listed = [row for row in rows if row["queue"]["name"] == queue]
            if not listed:
                time.sleep(0.2)
    finally:
        connection.close()
        channel.queue_delete(queue)
        channel.connection.close()
    assert listed == [
        {
            "ack_required": True,
            "active": True,
            "activity_status": "up",
            "arguments": {},
            "channel_details": [],
            "consumer_tag": "0",
            "consumer_timeout": 1800000,
            "exclusive": False,
            "prefetch_count": 0,
            "queue": {"name": queue, "vhost": "/"},
        }
    ]
