"""The node-local credential the CLIs present instead of a user's password, as RabbitMQ's CLIs present the
Erlang cookie: a random secret in ``$HOME/.erlang.cookie`` (RabbitMQ's location; RABBITMQ_ERLANG_COOKIE
overrides it, as the rabbitmq image once allowed), created by the broker with mode 0600 when absent and
reused when present. The management API accepts it, in the ``X-WarrenMQ-Cookie`` header, from loopback
callers only, as an administrator acting as ``rmq-internal`` (RabbitMQ's CLI acting user)."""

from __future__ import annotations

import os
import secrets
import string
from collections.abc import Mapping
from pathlib import Path

HEADER = "X-WarrenMQ-Cookie"
ACTING_USER = "rmq-internal"
ENV = "RABBITMQ_ERLANG_COOKIE"


def cookie_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home()) / ".erlang.cookie"


def read_cookie(environ: Mapping[str, str] | None = None) -> str | None:
    """The cookie the CLIs send (None: no cookie file readable by this user)."""
    env = os.environ if environ is None else environ
    if env.get(ENV):
        return env[ENV]
    try:
        return cookie_path(env).read_text().strip() or None
    except OSError:
        return None


def ensure_cookie(environ: Mapping[str, str] | None = None) -> str:
    """The broker's cookie: the existing one, else a new random one written with mode 0600 (like Erlang's
    20 upper-case letters)."""
    existing = read_cookie(environ)
    if existing:
        return existing
    path = cookie_path(environ)
    value = "".join(secrets.choice(string.ascii_uppercase) for _ in range(20))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another node of this user wrote it meanwhile
        return read_cookie(environ) or value
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value
