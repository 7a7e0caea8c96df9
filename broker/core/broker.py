"""The broker's root state: virtual hosts and users, shared by every connection on the one event loop."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker.core.clock import Clock, ManualClock
from broker.core.dead_letter import HeaderRewriter
from broker.core.dispatcher import Dispatcher
from broker.core.events import EventBus
from broker.core.names import NameGenerator
from broker.core.passwords import check_password
from broker.core.persistence import Persistence
from broker.core.profile import DEFAULT_PROFILE, Profile
from broker.core.queue import Queue
from broker.core.vhost import VirtualHost


class Broker:
    """Entry point of the core. ``call_soon`` is the event loop's, injected so the core stays free of
    asyncio.
    """

    def __init__(
        self,
        call_soon: Callable[[Callable[[], None]], Any],
        users: Mapping[str, str] | None = None,
        vhosts: Iterable[str] = ("/",),
        name_seed: int | None = None,
        clock: Clock | None = None,
        profile: Profile = DEFAULT_PROFILE,
        rewrite_header: HeaderRewriter | None = None,
        persistence: Persistence | None = None,
    ) -> None:
        # The server passes the loop's clock; without one time stands still until a test advances it.
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.profile = profile
        self.rewrite_header = rewrite_header
        self.dispatcher = Dispatcher(call_soon)
        self.events = EventBus()
        self.names = NameGenerator(name_seed)
        self.users: dict[str, str] = dict(users if users is not None else {"guest": "guest"})
        # Users imported from definitions with RabbitMQ password hashes: name -> (hash, algorithm).
        self.user_hashes: dict[str, tuple[str, str]] = {}
        self.vhosts: dict[str, VirtualHost] = {}
        # Direct reply-to keys to the private queue of their reply consumer (owned by the session layer).
        self.direct_reply: dict[str, Queue] = {}
        # Durable state goes here (broker/storage); None: nothing outlives the process.
        self.persistence = persistence
        for name in vhosts:
            self.add_vhost(name)

    def add_vhost(self, name: str) -> VirtualHost:
        vhost = self.vhosts.get(name)
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(
                name, self.dispatcher, self.names, self.events, self.clock, self.profile
            )
            vhost.rewrite_header = self.rewrite_header
            vhost.persistence = self.persistence
            if self.persistence is not None:
                self.persistence.vhost_added(name)
        return vhost

    def delete_vhost(self, name: str) -> bool:
        """Delete a vhost as `rabbitmqctl delete_vhost` does: its connections are closed with 320
        "vhost 'x' is deleted" (rabbit_connection_tracking), then its queues and exchanges go. False if
        missing. (RabbitMQ 3.10.8 races two closers here and sometimes sends "vhost 'x' is down" instead;
        "is deleted" is the text of the deletion itself.)
        """
        vhost = self.vhosts.pop(name, None)
        if vhost is None:
            return False
        for connection in list(vhost.connections):
            connection.force_close(f"vhost '{name}' is deleted")
        vhost.close()
        if self.persistence is not None:
            self.persistence.vhost_deleted(name)
        return True

    def save_user(
        self, name: str, password: str | None = None, password_hash: tuple[str, str] | None = None
    ) -> None:
        """Add or replace a user: a plain password, or a RabbitMQ (hash, algorithm) pair from definitions."""
        if password_hash is not None:
            self.user_hashes[name] = password_hash
            self.users.setdefault(name, "")  # listed with the others; authenticate() checks the hash
        else:
            self.users[name] = password or ""
            self.user_hashes.pop(name, None)
        if self.persistence is not None:
            self.persistence.user_saved(name, password, password_hash)

    def set_header_rewriter(self, rewrite: HeaderRewriter) -> None:
        """Install the content-header rewriter (the session layer's) in the broker and every vhost."""
        self.rewrite_header = rewrite
        for vhost in self.vhosts.values():
            vhost.rewrite_header = rewrite

    def authenticate(self, username: str, password: str) -> bool:
        hashed = self.user_hashes.get(username)
        if hashed is not None:
            return check_password(password, *hashed)
        expected = self.users.get(username)
        # compare_digest: no timing signal on how much of a password matched.
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())
