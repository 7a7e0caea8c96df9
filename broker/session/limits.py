"""Vhost and user limits checked when a connection or channel opens (rabbit_reader, RabbitMQ's texts checked
against 3.10.8): a vhost's max-connections and a user's max-connections refuse connection.open, a user's
max-channels refuses channel.open; all three close the connection with 530 NOT_ALLOWED.

Connections count once open (as rabbit_connection_tracking tracks them); channels count across every open
connection of the user.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, cast

from broker.core.broker import Broker
from broker.core.policies.runtime_parameters import effective_limit
from broker.core.topology.vhost import VirtualHost
from protocol.errors import HardError, ReplyCode


class _Tracked(Protocol):
    username: str
    channels: Mapping[int, Any]


def _user_connections(broker: Broker, username: str) -> Iterator[_Tracked]:
    for vhost in broker.vhosts.values():
        for connection in vhost.connections:
            tracked = cast("_Tracked", connection)
            if tracked.username == username:
                yield tracked


def _user_limit(broker: Broker, username: str, name: str) -> int | None:
    user = broker.access.users.get(username)
    return effective_limit(user.limits, name) if user is not None else None


def check_connection_limits(broker: Broker, vhost: VirtualHost, username: str) -> None:
    """connection.open: the vhost's limit first, then the user's (rabbit_reader's order)."""
    limit = vhost.connection_limit()
    if limit is not None and len(vhost.connections) >= limit:
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"access to vhost '{vhost.name}' refused for user '{username}': "
            f"connection limit ({limit}) is reached",
            10,
            40,
        )
    limit = _user_limit(broker, username, "max-connections")
    if limit is not None and sum(1 for _ in _user_connections(broker, username)) >= limit:
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"connection refused for user '{username}': user connection limit ({limit}) is reached",
            10,
            40,
        )


def check_channel_limit(broker: Broker, username: str) -> None:
    """channel.open: the user's max-channels over all of the user's connections."""
    limit = _user_limit(broker, username, "max-channels")
    if limit is None:
        return
    if sum(len(connection.channels) for connection in _user_connections(broker, username)) >= limit:
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"number of channels opened for user '{username}' has reached the maximum allowed user limit of "
            f"({limit})",
            20,
            10,
        )
