"""TLS with certificates made by trustme: AMQPS with pika and aio-pika, mutual TLS with the EXTERNAL
mechanism (user from the client certificate), refused expired and untrusted client certificates with a log
line that says why, fail_if_no_peer_cert, the TLS handshake timeout, and HTTPS management."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aio_pika
import pika
import pika.credentials
import pika.exceptions
import pytest
import trustme
from pamqp import commands, frame, header

from tests.hardening.served import Served, serve
from tests.ports import free_port
from tests.tls_certs import Certificates, make_certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@dataclass
class TLSBroker:
    served: Served
    ssl_port: int
    https_port: int


def _tls_conf(certs: Certificates, ssl_port: int, *, fail_if_no_peer_cert: bool, extra: str = "") -> str:
    return (
        f"listeners.ssl.default = 127.0.0.1:{ssl_port}\n"
        f"ssl_options.cacertfile = {certs.ca_file}\n"
        f"ssl_options.certfile = {certs.server_cert}\n"
        f"ssl_options.keyfile = {certs.server_key}\n"
        "ssl_options.verify = verify_peer\n"
        f"ssl_options.fail_if_no_peer_cert = {str(fail_if_no_peer_cert).lower()}\n"
        "ssl_options.versions.1 = tlsv1.3\n"
        "ssl_options.versions.2 = tlsv1.2\n" + extra
    )


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[TLSBroker]:
    ssl_port, https_port = free_port(), free_port()
    conf = _tls_conf(
        certs,
        ssl_port,
        fail_if_no_peer_cert=False,
        extra=(
            "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL\n"
            "ssl_cert_login_from = common_name\nssl_handshake_timeout = 1500\n"
            f"management.ssl.port = {https_port}\nmanagement.ssl.certfile = {certs.server_cert}\n"
            f"management.ssl.keyfile = {certs.server_key}\n"
        ),
    )
    served = serve(tmp_path_factory.mktemp("tls"), conf)
    assert (served.ready["amqps_port"], served.ready["management_ssl_port"]) == (ssl_port, https_port)
    yield TLSBroker(served, ssl_port, https_port)
    served.stop()


def _pika(port: int, context: ssl.SSLContext, **overrides: object) -> pika.BlockingConnection:
    options = pika.SSLOptions(context, "localhost")
    return pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", port, ssl_options=options, socket_timeout=5, **overrides)
    )


def _round_trip(connection: pika.BlockingConnection) -> bytes:
    channel = connection.channel()
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.basic_publish("", queue, b"over tls")
    _method, _props, body = channel.basic_get(queue, auto_ack=True)
    return bytes(body)


def _wait_for_log(served: Served, text: str, timeout_s: float = 10.0) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout_s
    while True:
        lines = [json.loads(line) for line in served.log().splitlines() if line.startswith("{")]
        found = [line for line in lines if text in json.dumps(line)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_pika_over_tls_with_plain_login(tls_broker: TLSBroker, certs: Certificates) -> None:
    connection = _pika(tls_broker.ssl_port, certs.client_context())
    assert _round_trip(connection) == b"over tls"
    _status, connections = tls_broker.served.http("/api/connections")
    assert [(c["ssl"], c["auth_mechanism"], c["user"]) for c in connections] == [(True, "PLAIN", "guest")]
    connection.close()


def test_mutual_tls_logs_in_with_external_as_the_certificates_common_name(
    tls_broker: TLSBroker, certs: Certificates
) -> None:
    context = certs.client_context(certs.client("guest"))
    connection = _pika(tls_broker.ssl_port, context, credentials=pika.credentials.ExternalCredentials())
    assert _round_trip(connection) == b"over tls"
    _status, connections = tls_broker.served.http("/api/connections")
    assert [(c["auth_mechanism"], c["user"]) for c in connections] == [("EXTERNAL", "guest")]
    connection.close()


def test_external_for_a_certificate_naming_an_unknown_user_is_refused(
    tls_broker: TLSBroker, certs: Certificates
) -> None:
    context = certs.client_context(certs.client("nobody"))
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        _pika(tls_broker.ssl_port, context, credentials=pika.credentials.ExternalCredentials())


def _mechanisms(port: int, context: ssl.SSLContext) -> str:
    """The mechanisms connection.start offers on a TLS connection made with ``context``."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(header.ProtocolHeader().marshal())
        data = b""
        while True:
            data += tls.recv(65536)
            try:
                _consumed, _channel, start = frame.unmarshal(data)
            except Exception:  # incomplete frame: read more
                continue
            assert isinstance(start, commands.Connection.Start)
            return str(start.mechanisms)


def test_external_is_offered_only_to_a_peer_with_a_certificate(
    tls_broker: TLSBroker, certs: Certificates
) -> None:
    with_cert = _mechanisms(tls_broker.ssl_port, certs.client_context(certs.client("guest")))
    without = _mechanisms(tls_broker.ssl_port, certs.client_context())
    assert (with_cert, without) == ("EXTERNAL AMQPLAIN PLAIN", "AMQPLAIN PLAIN")


def test_aio_pika_over_mutual_tls(tls_broker: TLSBroker, certs: Certificates) -> None:
    context = certs.client_context(certs.client("guest"))

    async def scenario() -> bytes:
        connection = await aio_pika.connect(
            host="127.0.0.1", port=tls_broker.ssl_port, ssl=True, ssl_context=context, timeout=10
        )
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue(exclusive=True)
            await channel.default_exchange.publish(aio_pika.Message(b"aio over tls"), routing_key=queue.name)
            message = await queue.get(timeout=5)
            assert message is not None
            await message.ack()
            return message.body

    assert asyncio.run(scenario()) == b"aio over tls"


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("expired", "certificate has expired"), ("untrusted", "certificate verify failed")],
)
def test_expired_or_untrusted_client_certificates_are_refused_with_a_log_line(
    tls_broker: TLSBroker, certs: Certificates, kind: str, reason: str
) -> None:
    name = f"refused-{kind}"
    client = certs.client(name, expired=True) if kind == "expired" else certs.client(name, ca=trustme.CA())
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        _pika(tls_broker.ssl_port, certs.client_context(client))
    lines = _wait_for_log(tls_broker.served, reason)
    assert lines, f"no log line says {reason!r}"
    assert (lines[-1]["event"], lines[-1]["level"]) == ("TLS handshake failed", "warning")


def test_tls_handshake_timeout_drops_a_silent_peer(tls_broker: TLSBroker) -> None:
    # ssl_handshake_timeout = 1500 ms: a peer that never sends its ClientHello is disconnected (the 10 s
    # socket timeout only bounds the test).
    with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=10) as silent:
        assert silent.recv(1) == b""


def test_https_management(tls_broker: TLSBroker, certs: Certificates) -> None:
    request = urllib.request.Request(f"https://localhost:{tls_broker.https_port}/api/health/checks/alarms")
    request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")
    with urllib.request.urlopen(request, context=certs.client_context(), timeout=10) as response:
        assert (response.status, json.loads(response.read())) == (200, {"status": "ok"})


def test_fail_if_no_peer_cert_refuses_a_client_without_certificate(
    tmp_path: Path, certs: Certificates
) -> None:
    ssl_port = free_port()
    served = serve(tmp_path, _tls_conf(certs, ssl_port, fail_if_no_peer_cert=True))
    try:
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            _pika(ssl_port, certs.client_context())
        assert _wait_for_log(served, "peer did not return a certificate")
        connection = _pika(ssl_port, certs.client_context(certs.client("guest")))
        assert _round_trip(connection) == b"over tls"  # a certificate and PLAIN: EXTERNAL is not configured
        connection.close()
    finally:
        served.stop()
