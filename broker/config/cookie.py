"""The Erlang cookie, the secret the CLIs prove instead of a user's password, as RabbitMQ's CLIs do: a random
secret in ``$HOME/.erlang.cookie`` (RabbitMQ's location; RABBITMQ_ERLANG_COOKIE overrides it, as the
rabbitmq image once allowed), created by the node with mode 0400 when absent (as the Erlang runtime creates
it) and reused when present. It never crosses the wire: the CLI channel's handshake proves it with HMAC
digests (broker/config/control_auth.py); the caller then acts as ``rmq-internal``, RabbitMQ's CLI user."""

from __future__ import annotations

import os
import secrets
import string
from collections.abc import Mapping
from pathlib import Path

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
    """The broker's cookie: the existing one, else a new random one written with mode 0400 (like Erlang's:
    20 upper-case letters, readable by its owner only)."""
    existing = read_cookie(environ)
    if existing:
        return existing
    path = cookie_path(environ)
    value = "".join(secrets.choice(string.ascii_uppercase) for _ in range(20))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    except FileExistsError:  # another node of this user wrote it meanwhile
        return read_cookie(environ) or value
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value
