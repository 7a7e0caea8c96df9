"""TLS on the standard ssl module: the server context from RabbitMQ's ssl_options (its handshakes log why
they fail, e.g. a refused certificate), and the user name the EXTERNAL mechanism takes from a client
certificate (rabbitmq_auth_mechanism_ssl's ssl_cert_login_from).
"""

from __future__ import annotations

import ssl
from typing import Any

import structlog

from broker.config.model import TLSOptions

log = structlog.get_logger("warrenmq.tls")

_VERSIONS = {
    "tlsv1": ssl.TLSVersion.TLSv1,
    "tlsv1.1": ssl.TLSVersion.TLSv1_1,
    "tlsv1.2": ssl.TLSVersion.TLSv1_2,
    "tlsv1.3": ssl.TLSVersion.TLSv1_3,
}
# X.509 attribute names as RabbitMQ's rabbit_ssl writes a distinguished name (RFC 4514 short names).
_DN_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "emailAddress",
}


class TLSConfigError(Exception):
    """ssl_options that cannot make a context (missing file, bad key, unknown version): the text says so."""


def server_context(options: TLSOptions) -> ssl.SSLContext:
    if not options.certfile or not options.keyfile:
        raise TLSConfigError("TLS listener needs ssl_options.certfile and ssl_options.keyfile")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(options.certfile, options.keyfile, options.password)
        if options.cacertfile:
            context.load_verify_locations(options.cacertfile)
        if options.ciphers:
            context.set_ciphers(":".join(options.ciphers))
    except (OSError, ssl.SSLError) as error:
        raise TLSConfigError(f"TLS: {error}") from None
    if options.versions:
        try:
            versions = sorted(_VERSIONS[name.lower()] for name in options.versions)
        except KeyError as error:
            raise TLSConfigError(f"TLS: unknown version {error.args[0]!r} in ssl_options.versions") from None
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
    context.sslobject_class = LoggingSSLObject
    if options.verify == "verify_peer":
        # fail_if_no_peer_cert = false lets a client without a certificate in (CERT_OPTIONAL), as in Erlang.
        context.verify_mode = ssl.CERT_REQUIRED if options.fail_if_no_peer_cert else ssl.CERT_OPTIONAL
    return context


def _rdns(name: Any) -> list[tuple[str, str]]:
    return [(key, value) for rdn in name or () for key, value in rdn]


def login_name(certificate: dict[str, Any] | None, login_from: str) -> str | None:
    """The user name in a verified peer certificate (``SSLSocket.getpeercert()``), as
    rabbit_auth_mechanism_ssl reads it: the subject's distinguished name (the default), its CN, or its first
    subject alternative name."""
    if not certificate:
        return None
    subject = _rdns(certificate.get("subject"))
    if login_from == "common_name":
        return next((value for key, value in subject if key == "commonName"), None)
    if login_from == "subject_alternative_name":
        names = certificate.get("subjectAltName") or ()
        return str(names[0][1]) if names else None
    # rabbit_ssl:peer_cert_subject: the RDNs most significant last, e.g. "CN=client,O=Example".
    return ",".join(f"{_DN_NAMES.get(key, key)}={value}" for key, value in reversed(subject)) or None


class LoggingSSLObject(ssl.SSLObject):
    """The event loop's TLS layer stays silent about failed handshakes (an SSLError is an OSError, logged only
    in debug mode); this says why one failed, e.g. "certificate has expired", before the socket closes."""

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as error:
            reason = getattr(error, "verify_message", None) or error.reason or str(error)
            log.warning("TLS handshake failed", reason=str(reason), error=str(error))
            raise
