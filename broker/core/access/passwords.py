"""RabbitMQ's stored password hashes (rabbit_password_hashing_*): base64(salt(4) + H(salt + password))."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

ALGORITHMS = {
    "rabbit_password_hashing_sha256": "sha256",
    "rabbit_password_hashing_sha512": "sha512",
    "rabbit_password_hashing_md5": "md5",
}
DEFAULT_ALGORITHM = "rabbit_password_hashing_sha256"


def hash_password(password: str, algorithm: str = DEFAULT_ALGORITHM, salt: bytes | None = None) -> str:
    salt = salt if salt is not None else os.urandom(4)
    digest = hashlib.new(ALGORITHMS[algorithm], salt + password.encode()).digest()
    return base64.b64encode(salt + digest).decode()


def check_password(password: str, password_hash: str, algorithm: str = DEFAULT_ALGORITHM) -> bool:
    try:
        raw = base64.b64decode(password_hash, validate=True)
    except ValueError:
        return False
    if len(raw) < 5:
        return False
    expected = hash_password(password, algorithm, raw[:4])
    return hmac.compare_digest(expected, password_hash)
