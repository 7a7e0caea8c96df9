"""The validity periods of the TLS listeners' certificates, for health/checks/certificate-expiration.

As rabbit_mgmt_wm_health_check_certificate_expiration (3.10): every certificate in each TLS listener's
certfile and cacertfile (PEM, several per file allowed) is read, and a listener fails the check when one of
them has its notAfter before now + the period, or its notBefore still ahead. The notBefore / notAfter fields
are read straight from the DER (X.509's fixed layout), so no crypto package is needed.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from dataclasses import dataclass

_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)
_SEQUENCE, _CONTEXT_0, _UTC_TIME, _GENERALIZED_TIME = 0x30, 0xA0, 0x17, 0x18
NOT_YET_VALID = "Certificate is not yet valid"


class CertificateError(ValueError):
    pass


@dataclass(frozen=True)
class Validity:
    not_before: datetime.datetime
    not_after: datetime.datetime


def _tlv(der: bytes, at: int) -> tuple[int, int, int]:
    """The tag, the start of the content and its end, of the DER element at ``at``."""
    if at + 2 > len(der):
        raise CertificateError("truncated DER")
    tag, length = der[at], der[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(der):
            raise CertificateError("bad DER length")
        length = int.from_bytes(der[at : at + count], "big")
        at += count
    if at + length > len(der):
        raise CertificateError("truncated DER")
    return tag, at, at + length


def _time(tag: int, text: bytes) -> datetime.datetime:
    value = text.decode("ascii")
    if tag == _UTC_TIME:  # YYMMDDHHMMSSZ; RFC 5280: YY >= 50 is 19YY
        year = int(value[:2])
        value = f"{1900 + year if year >= 50 else 2000 + year}{value[2:]}"
    elif tag != _GENERALIZED_TIME:
        raise CertificateError("validity is not a time")
    parsed = datetime.datetime.strptime(value.rstrip("Z"), "%Y%m%d%H%M%S")
    return parsed.replace(tzinfo=datetime.UTC)


def der_validity(der: bytes) -> Validity:
    """Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
    signature, issuer, validity SEQUENCE { notBefore, notAfter }, ... }, ... } (RFC 5280 §4.1)."""
    tag, start, _ = _tlv(der, 0)
    if tag != _SEQUENCE:
        raise CertificateError("not a certificate")
    tag, at, _ = _tlv(der, start)
    if tag != _SEQUENCE:
        raise CertificateError("not a certificate")
    tag, _, end = _tlv(der, at)
    if tag == _CONTEXT_0:  # the version
        at = end
    for _ in range(3):  # serial number, signature algorithm, issuer
        _, _, at = _tlv(der, at)
    tag, at, _ = _tlv(der, at)
    if tag != _SEQUENCE:
        raise CertificateError("no validity")
    before_tag, before_start, before_end = _tlv(der, at)
    after_tag, after_start, after_end = _tlv(der, before_end)
    return Validity(
        _time(before_tag, der[before_start:before_end]), _time(after_tag, der[after_start:after_end])
    )


def file_validities(path: str) -> list[Validity]:
    """Every certificate of a PEM file; raises OSError or CertificateError."""
    with open(path, "rb") as pem_file:
        text = pem_file.read()
    validities: list[Validity] = []
    for kind, body in _PEM_BLOCK.findall(text):
        if kind != b"CERTIFICATE":
            continue  # a key bundled with the certificate: not a validity to check
        try:
            der = base64.b64decode(b"".join(body.split()), validate=True)
        except binascii.Error as error:
            raise CertificateError(f"bad PEM: {error}") from None
        validities.append(der_validity(der))
    if not validities:
        raise CertificateError("The certificate file provided does not contain any PEM entry.")
    return validities


def expiring(path: str | None, now: datetime.datetime, deadline: datetime.datetime) -> list[str] | str:
    """RabbitMQ's ``*_expires_on`` of one file: the notAfter dates ("2026-11-26 9:05:00", Erlang's ~w
    hour) of its certificates expiring before ``deadline`` ([] when none, or no file), or an error text."""
    if path is None:
        return []
    try:
        validities = file_validities(path)
    except (OSError, CertificateError, ValueError) as error:
        return str(error)
    found: list[str] = []
    for validity in validities:
        if validity.not_before > now:
            return NOT_YET_VALID
        if validity.not_after < deadline:
            after = validity.not_after
            found.append(f"{after:%Y-%m-%d} {after.hour}:{after:%M:%S}")
    return found
