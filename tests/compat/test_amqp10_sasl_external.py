"""SASL EXTERNAL over AMQP 1.0 on the AMQPS listener: the user is the client certificate's (CN, with
``ssl_cert_login_from = common_name``), as RabbitMQ 4.0.5 with the rabbitmq_auth_mechanism_ssl plugin and
``auth_mechanisms.*`` listing EXTERNAL answers. Each case runs against WarrenMQ (--profile rabbitmq-4.0) and a
RabbitMQ 4.0.5 node with the same TLS configuration (skipped with the reason when podman or its image is
missing); the expected values are 4.0.5's."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from proton import Message, SSLDomain
from proton.utils import BlockingConnection

from protocol.amqp10.frames import SASL_HEADER
from protocol.amqp10.sasl import SaslInit, SaslMechanisms, SaslOutcome
from protocol.amqp10.types import Symbol
from tests.compat.amqp10_support import EOF_, RABBITMQ4, RESET, WARRENMQ, RawClient
from tests.compat.rabbitmq4_node import CONFIG_DIR, RabbitMQ4Node, image_problem
from tests.hardening.served import Served, serve
from tests.ports import free_port
from tests.tls_certs import Certificates, make_certificates

pytestmark = pytest.mark.compat

MECHANISMS = "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL\n"


def _tls_conf(ssl_port: int, ca: str, cert: str, key: str) -> str:
    return (
        f"listeners.ssl.default = 127.0.0.1:{ssl_port}\n"
        f"ssl_options.cacertfile = {ca}\nssl_options.certfile = {cert}\nssl_options.keyfile = {key}\n"
        "ssl_options.verify = verify_peer\nssl_options.fail_if_no_peer_cert = false\n"
        "ssl_cert_login_from = common_name\n" + MECHANISMS
    )


@dataclass
class TLSBroker:
    port: int  # AMQP over TCP
    ssl_port: int
    http_url: str


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def warrenmq_tls(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[TLSBroker]:
    ssl_port = free_port()
    conf = _tls_conf(ssl_port, str(certs.ca_file), str(certs.server_cert), str(certs.server_key))
    served: Served = serve(
        tmp_path_factory.mktemp("warrenmq-tls"), conf, env={"WARRENMQ_PROFILE": "rabbitmq-4.0"}
    )
    try:
        yield TLSBroker(served.port, ssl_port, f"http://127.0.0.1:{served.management_port}")
    finally:
        served.stop()


@pytest.fixture(scope="module")
def rabbitmq4_tls(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[TLSBroker]:
    problem = image_problem()
    if problem is not None:
        pytest.skip(problem)
    ssl_port = free_port()
    files = {
        "ca.pem": certs.ca_file.read_bytes(),
        "server.pem": certs.server_cert.read_bytes(),
        "server.key": certs.server_key.read_bytes(),
    }
    node = RabbitMQ4Node(
        tmp_path_factory.mktemp("rabbitmq4-tls"),
        plugins=("rabbitmq_auth_mechanism_ssl",),
        extra_config=_tls_conf(
            ssl_port, f"{CONFIG_DIR}/ca.pem", f"{CONFIG_DIR}/server.pem", f"{CONFIG_DIR}/server.key"
        ),
        config_files=files,
    )
    node.start()
    try:
        _wait_listening(ssl_port, node.log_file)
        yield TLSBroker(node.port, ssl_port, node.http_url)
    finally:
        node.stop()


def _wait_listening(port: int, log: Path, timeout_s: float = 60.0) -> None:
    """The node is up once its AMQP and HTTP listeners answer; its TLS listener may come a moment later
    (refused once in a clean-clone run under load), so wait for it too."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"RabbitMQ 4.0.5's TLS listener on {port} never answered; see {log}"
                ) from None
            time.sleep(0.1)


@pytest.fixture(params=[WARRENMQ, RABBITMQ4])
def broker(request: pytest.FixtureRequest) -> TLSBroker:
    fixture = "warrenmq_tls" if request.param == WARRENMQ else "rabbitmq4_tls"
    found: TLSBroker = request.getfixturevalue(fixture)
    return found


def _client(broker: TLSBroker, certs: Certificates, name: str | None, tls: bool = True) -> RawClient:
    if not tls:
        return RawClient(broker.port)
    context = certs.client_context(certs.client(name) if name is not None else None)
    return RawClient(broker.ssl_port, context)


def _offered(client: RawClient) -> tuple[str, ...]:
    client.send(SASL_HEADER)
    _header, mechanisms = client.read_count(2)
    assert isinstance(mechanisms, SaslMechanisms), mechanisms
    return tuple(mechanisms.sasl_server_mechanisms)


@pytest.mark.parametrize(
    ("tls", "name", "offered"),
    [
        (True, "guest", ("PLAIN", "AMQPLAIN", "EXTERNAL")),
        (True, None, ("PLAIN", "AMQPLAIN", "EXTERNAL")),  # offered on TLS, certificate or not
        (False, None, ("PLAIN", "AMQPLAIN")),
    ],
    ids=["tls-with-certificate", "tls-without", "tcp"],
)
def test_mechanisms_offered(
    broker: TLSBroker, certs: Certificates, tls: bool, name: str | None, offered: tuple[str, ...]
) -> None:
    """The configured auth_mechanisms in their order (so no ANONYMOUS), EXTERNAL on the TLS listener."""
    client = _client(broker, certs, name, tls)
    try:
        assert _offered(client) == offered
    finally:
        client.close()


def test_external_logs_in_as_the_certificates_common_name(broker: TLSBroker, certs: Certificates) -> None:
    client = _client(broker, certs, "guest")
    try:
        client.login(mechanism="EXTERNAL", response=b"")
        client.begin()
        row = _connection_row(broker, "EXTERNAL")
    finally:
        client.close()
    assert (row["protocol"], row["auth_mechanism"], row["user"], row["ssl"]) == (
        "AMQP 1-0",
        "EXTERNAL",
        "guest",
        True,
    )


def _connection_row(broker: TLSBroker, mechanism: str) -> dict[str, Any]:
    """The management API's row of the connection logged in with ``mechanism`` (4.0.5 lists a connection
    once its first statistics are out: polled)."""
    deadline = time.monotonic() + 20
    while True:
        rows = requests.get(f"{broker.http_url}/api/connections", auth=("guest", "guest"), timeout=5).json()
        found = [row for row in rows if row.get("auth_mechanism") == mechanism]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, rows
            return dict(found[0])
        time.sleep(0.2)


@pytest.mark.parametrize("name", ["nobody", None], ids=["unknown-user", "no-certificate"])
def test_external_refused(broker: TLSBroker, certs: Certificates, name: str | None) -> None:
    """A certificate naming no user, or none at all: the auth outcome, then the socket ends."""
    client = _client(broker, certs, name)
    try:
        _offered(client)
        client.sasl(SaslInit(mechanism=Symbol("EXTERNAL"), initial_response=b""))
        outcome, end = client.read_count(2, deadline_s=15)
    finally:
        client.close()
    assert isinstance(outcome, SaslOutcome), outcome
    assert outcome.code == 1
    assert end in (EOF_, RESET)


def test_proton_with_a_client_certificate(broker: TLSBroker, certs: Certificates) -> None:
    """python-qpid-proton over TLS, EXTERNAL only: sends and receives as the certificate's user."""
    cert, key = certs.client("guest")
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(str(certs.ca_file))
    domain.set_credentials(str(cert), str(key), None)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    connection = BlockingConnection(
        f"amqps://localhost:{broker.ssl_port}", ssl_domain=domain, allowed_mechs="EXTERNAL", timeout=15
    )
    try:
        # The v1 address /queue/<name> declares the queue (4.0.5 still accepts it).
        address = f"/queue/external-{free_port()}"
        connection.create_sender(address).send(Message(body="over EXTERNAL"))
        receiver = connection.create_receiver(address, credit=1)
        received = receiver.receive(timeout=10)
        receiver.accept()
    finally:
        connection.close()
    assert received.body == "over EXTERNAL"
