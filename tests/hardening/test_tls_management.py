"""The management side of TLS: the certificate-expiration health check reads the listeners' real certificates
(made by trustme with short validity), and management.ssl.* without management.tcp.* serves HTTPS only, as
rabbit_mgmt_app does."""

from __future__ import annotations

import base64
import datetime
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hardening.served import Served, serve
from tests.hardening.test_tls import certs
from tests.ports import free_port
from tests.tls_certs import Certificates

__all__ = ["certs"]  # the module-scoped fixture, shared with test_tls

SOON = datetime.timedelta(days=10)


def _https(port: int, ca_file: Path, path: str) -> tuple[int, Any]:
    context = ssl.create_default_context(cafile=str(ca_file))
    request = urllib.request.Request(f"https://localhost:{port}{path}")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _leaf(certs: Certificates, name: str, not_after: datetime.datetime) -> tuple[Path, Path]:
    leaf = certs.ca.issue_cert("localhost", "127.0.0.1", not_after=not_after)
    cert, key = certs.directory / f"{name}.pem", certs.directory / f"{name}.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    leaf.private_key_pem.write_to_path(str(key))
    return cert, key


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[tuple[Served, str]]:
    """AMQPS with a certificate that expires in ten days; HTTPS management with the long-lived one."""
    not_after = (datetime.datetime.now(datetime.UTC) + SOON).replace(microsecond=0)
    cert, key = _leaf(certs, "soon", not_after)
    ssl_port, https_port = free_port(), free_port()
    conf = (
        f"listeners.ssl.default = 127.0.0.1:{ssl_port}\n"
        f"ssl_options.cacertfile = {certs.ca_file}\nssl_options.certfile = {cert}\n"
        f"ssl_options.keyfile = {key}\n"
        f"management.ssl.port = {https_port}\nmanagement.ssl.certfile = {certs.server_cert}\n"
        f"management.ssl.keyfile = {certs.server_key}\nmanagement.ssl.cacertfile = {certs.ca_file}\n"
    )
    served = serve(tmp_path_factory.mktemp("expiring"), conf)
    yield served, f"{not_after:%Y-%m-%d} {not_after.hour}:{not_after:%M:%S}"
    served.stop()


def test_certificate_expiration_check_fails_for_a_listener_whose_certificate_expires_within_the_period(
    expiring: tuple[Served, str],
) -> None:
    served, expires_on = expiring
    status, body = served.http("/api/health/checks/certificate-expiration/2/weeks")
    assert status == 503
    assert body["status"] == "failed"
    assert body["reason"] == "Certificates expiring"
    [listener] = body["expired"]  # the HTTPS listener's certificate lives on (trustme: until 3000)
    assert listener["protocol"] == "amqp/ssl"
    assert listener["port"] == served.ready["amqps_port"]
    assert listener["certfile"].endswith("soon.pem")
    assert listener["certfile_expires_on"] == [expires_on]
    assert listener["cacertfile_expires_on"] == []
    assert served.http("/api/health/checks/certificate-expiration/1/months")[0] == 503


def test_certificate_expiration_check_passes_when_nothing_expires_within_the_period(
    expiring: tuple[Served, str],
) -> None:
    served, _ = expiring
    assert served.http("/api/health/checks/certificate-expiration/9/days") == (200, {"status": "ok"})
    assert served.http("/api/health/checks/certificate-expiration/1/WEEKS") == (200, {"status": "ok"})


def test_certificate_expiration_check_refuses_a_bad_period_with_rabbitmqs_texts(
    expiring: tuple[Served, str],
) -> None:
    served, _ = expiring
    status, body = served.http("/api/health/checks/certificate-expiration/soon/days")
    assert (status, body["reason"]) == (400, "Invalid expiration value.")
    status, body = served.http("/api/health/checks/certificate-expiration/1/fortnights")
    assert (status, body["reason"]) == (
        400,
        "Time unit not recognised. Supported units: days, weeks, months, years.",
    )


def test_an_expiring_certificate_in_the_cacertfile_fails_the_check_too(
    tmp_path: Path, certs: Certificates
) -> None:
    # Every certificate of the cacertfile is checked (rabbit_mgmt_wm_health_check_certificate_expiration),
    # here a short-lived one after the trusted CA, on the HTTPS listener.
    short = (datetime.datetime.now(datetime.UTC) + SOON).replace(microsecond=0)
    short_cert, _ = _leaf(certs, "short-in-bundle", short)
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(certs.ca_file.read_bytes() + short_cert.read_bytes())
    https_port = free_port()
    conf = (
        f"management.ssl.port = {https_port}\nmanagement.ssl.certfile = {certs.server_cert}\n"
        f"management.ssl.keyfile = {certs.server_key}\nmanagement.ssl.cacertfile = {bundle}\n"
    )
    served = serve(tmp_path, conf)
    try:
        status, body = served.http("/api/health/checks/certificate-expiration/3/weeks")
    finally:
        served.stop()
    assert status == 503
    [listener] = body["expired"]
    assert (listener["protocol"], listener["port"]) == ("https", https_port)
    assert listener["certfile_expires_on"] == []
    assert listener["cacertfile_expires_on"] == [f"{short:%Y-%m-%d} {short.hour}:{short:%M:%S}"]


def test_management_ssl_without_management_tcp_serves_https_only(tmp_path: Path, certs: Certificates) -> None:
    https_port = free_port()
    conf = (
        f"management.ssl.port = {https_port}\nmanagement.ssl.certfile = {certs.server_cert}\n"
        f"management.ssl.keyfile = {certs.server_key}\n"
    )
    served = serve(tmp_path, conf, management_tcp=False)
    try:
        assert served.ready["management_port"] is None
        assert served.ready["management_ssl_port"] == https_port
        status, overview = _https(https_port, certs.ca_file, "/api/overview")
    finally:
        served.stop()
    assert status == 200
    protocols = {listener["protocol"]: listener["port"] for listener in overview["listeners"]}
    # The CLI channel is listed as RabbitMQ lists its distribution listener (protocol clustering), and the
    # Prometheus endpoint as rabbitmq_prometheus's (http/prometheus).
    assert protocols == {
        "amqp": served.port,
        "https": https_port,
        "clustering": served.ready["dist_port"],
        "http/prometheus": served.ready["prometheus_port"],
    }


def test_management_ssl_with_management_tcp_serves_both(tmp_path: Path, certs: Certificates) -> None:
    https_port = free_port()
    conf = (
        f"management.ssl.port = {https_port}\nmanagement.ssl.certfile = {certs.server_cert}\n"
        f"management.ssl.keyfile = {certs.server_key}\n"
    )
    served = serve(tmp_path, conf)  # adds management.tcp.port
    try:
        assert served.http("/api/health/checks/alarms") == (200, {"status": "ok"})
        assert _https(https_port, certs.ca_file, "/api/health/checks/alarms") == (200, {"status": "ok"})
    finally:
        served.stop()
