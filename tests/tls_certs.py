"""Certificates made by trustme for the TLS tests: a CA, a server certificate for localhost / 127.0.0.1, and
client certificates on demand (CN = the user name the EXTERNAL mechanism takes)."""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass
class Certificates:
    ca: trustme.CA
    ca_file: Path
    server_cert: Path
    server_key: Path
    directory: Path

    def client(self, name: str, *, ca: trustme.CA | None = None, expired: bool = False) -> tuple[Path, Path]:
        """A client certificate for CN=``name`` (also its SAN), signed by ``ca`` (default: the trusted CA)."""
        now = datetime.datetime.now(datetime.UTC)
        leaf = (ca or self.ca).issue_cert(
            f"{name}.example",
            common_name=name,
            not_before=now - datetime.timedelta(days=30) if expired else None,
            not_after=now - datetime.timedelta(days=1) if expired else None,
        )
        cert, key = self.directory / f"{name}-{id(leaf)}.pem", self.directory / f"{name}-{id(leaf)}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        return cert, key

    def client_context(self, client: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        if client is not None:
            context.load_cert_chain(str(client[0]), str(client[1]))
        return context


def make_certificates(directory: Path) -> Certificates:
    """A new CA and a server certificate for localhost and 127.0.0.1, written under ``directory``."""
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    ca_file, cert, key = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    server.private_key_pem.write_to_path(str(key))
    return Certificates(ca, ca_file, cert, key, directory)
