"""The broker's root state: virtual hosts and users, shared by every connection on the one event loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker.core.access.access import ADMINISTRATOR, AccessControl, Change, User
from broker.core.access.auth_attempts import AuthAttempts
from broker.core.access.passwords import DEFAULT_ALGORITHM
from broker.core.events import lifecycle_notices
from broker.core.events.events import EventBus
from broker.core.model.clock import Clock, ManualClock
from broker.core.model.dispatcher import Dispatcher
from broker.core.model.names import NameGenerator
from broker.core.model.profile import DEFAULT_PROFILE, Profile
from broker.core.model.protocol_counters import ProtocolCounters
from broker.core.model.stats import ChurnStats
from broker.core.policies.policies import Policy, PolicyTable
from broker.core.policies.runtime_parameters import RuntimeParameters
from broker.core.queues.queue import Queue
from broker.core.topology.dead_letter import HeaderRewriter
from broker.core.topology.persistence import Persistence
from broker.core.topology.vhost import VirtualHost


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
        self.churn = ChurnStats()  # the overview's churn_rates
        self.names = NameGenerator(name_seed)
        # Users, tags and permissions (rabbit_auth_backend_internal). Configured users are administrators with
        # full permissions on the configured vhosts, as RabbitMQ's default user is on "/".
        self.access = AccessControl()
        self.access.permission_first_in_refusals = profile.permission_in_refusals
        self.auth_attempts = AuthAttempts()  # logins over AMQP and HTTP (rabbit_core_metrics)
        self.amqp10_counters = ProtocolCounters()  # what AMQP 1.0 sessions publish and deliver
        # Plugin exchange types not declarable (their plugin is not in enabled_plugins): set_plugin_exchanges.
        self.disabled_exchange_types: frozenset[str] = frozenset()
        # Vhost metadata (description, tags, default_queue_type) as RabbitMQ keeps it, by vhost name.
        self.vhost_metadata: dict[str, dict[str, Any]] = {}
        configured = dict(users if users is not None else {"guest": "guest"})
        self.vhosts: dict[str, VirtualHost] = {}
        # Direct reply-to keys to the private queue of their reply consumer (owned by the session layer).
        self.direct_reply: dict[str, Queue] = {}
        # Durable state goes here (broker/storage); None: nothing outlives the process.
        self.persistence = persistence
        # Policies, operator policies, vhost limits and global parameters (rabbit_runtime_parameters).
        self.policies = PolicyTable()
        self.parameters = RuntimeParameters()
        vhost_names = list(vhosts)
        for name in vhost_names:
            self.add_vhost(name)
            # rabbit_vhost's boot step gives the default vhost this description (replaced by stored metadata).
            self.apply_vhost_metadata(name, {"description": "Default virtual host", "tags": []})
        # (user, vhost) pairs the configuration grants full permissions (stored by recovery when new).
        self.configured_grants = [(user, name) for user in configured for name in vhost_names]
        for user, password in configured.items():
            self.access.put_user(user, password=password, tags=(ADMINISTRATOR,))
        for user, name in self.configured_grants:
            self.access.set_permission(user, name, ".*", ".*", ".*")
        # From here on every user and permission change reaches the store (configured users are made from
        # the configuration at each start, so they are not stored unless changed).
        self.access.on_change = self._access_changed
        self.access.notify = self.events.notify  # permission.* notices (the event exchange)

    def add_vhost(self, name: str, metadata: dict[str, Any] | None = None) -> VirtualHost:
        """Create a vhost if missing; ``metadata`` (description, tags, default queue type) replaces its own.
        Notified as RabbitMQ does: its exchanges' exchange.created, then vhost.created (vhost.updated when it
        existed and metadata is given)."""
        vhost = self.vhosts.get(name)
        created = vhost is None
        if vhost is None:
            vhost = self.vhosts[name] = VirtualHost(
                name, self.dispatcher, self.names, self.events, self.clock, self.profile
            )
            vhost.rewrite_header = self.rewrite_header
            vhost.churn = self.churn
            vhost.persistence = self.persistence
            vhost.policies = self.policies
            vhost.parameters = self.parameters
            vhost.disabled_exchange_types = self.disabled_exchange_types
            if self.persistence is not None:
                self.persistence.vhost_added(name)
            lifecycle_notices.exchanges_created(self.events, name, list(vhost.exchanges.values()))
        if metadata is not None:
            self.set_vhost_metadata(name, metadata)
        if created or metadata is not None:
            lifecycle_notices.vhost_saved(self.events, name, self.vhost_metadata.get(name, {}), created)
        return vhost

    def disable_exchange_types(self, types: frozenset[str]) -> None:
        """Refuse these plugin exchange types from now on, in every vhost (existing exchanges stay)."""
        self.disabled_exchange_types = types
        for vhost in self.vhosts.values():
            vhost.disabled_exchange_types = types

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
        # rabbit_vhost:delete: permissions first (no new connections), then queues, then exchanges.
        self.access.vhost_deleted(name)
        vhost.close()
        policies = [(p, False) for p in self.policies.listing(name)]
        policies += [(p, True) for p in self.policies.listing(name, operator=True)]
        limits = name in self.parameters.vhost_limits
        lifecycle_notices.vhost_deleted(self.events, name, list(vhost.exchanges.values()), limits, policies)
        self.vhost_metadata.pop(name, None)
        self.policies.vhost_deleted(name)
        self.parameters.clear_vhost_limits(name)
        if self.persistence is not None:
            self.persistence.vhost_deleted(name)
        return True

    def save_user(
        self,
        name: str,
        password: str | None = None,
        password_hash: tuple[str, str] | None = None,
        tags: tuple[str, ...] | None = None,
    ) -> User:
        """Add or replace a user: a plain password, or a RabbitMQ (hash, algorithm) pair from definitions.
        ``tags`` None keeps an existing user's tags; a new user then gets "administrator", what every user
        had before tags existed. The store gets the change through `_access_changed`.
        """
        existing = self.access.users.get(name)
        notice_tags = tags or ()
        if tags is None:
            tags = existing.tags if existing is not None else (ADMINISTRATOR,)
        if password_hash is not None:
            user = self.access.put_user(
                name,
                password_hash=password_hash[0],
                hashing_algorithm=password_hash[1] or DEFAULT_ALGORITHM,
                tags=tags,
            )
        else:
            user = self.access.put_user(name, password=password or "", tags=tags)
        lifecycle_notices.user_saved(
            self.events,
            name,
            existing is None,
            password_hash is None,
            notice_tags if existing is None else tags,
        )
        return user

    def delete_user(self, name: str) -> bool:
        """Delete a user with its permissions (in the store too); False if there was none. Its open
        connections are closed with 320 "user 'u' is deleted", as rabbit_connection_tracking does on
        user_deleted."""
        if not self.access.delete_user(name):
            return False
        self.events.notify("user.deleted", {"name": name})
        for vhost in self.vhosts.values():
            for connection in [c for c in vhost.connections if c.username == name]:
                connection.force_close(f"user '{name}' is deleted")
        return True

    def set_vhost_metadata(self, name: str, metadata: dict[str, Any]) -> None:
        """A vhost's description, tags and default queue type (kept in the store with the vhost)."""
        self.apply_vhost_metadata(name, metadata)
        if self.persistence is not None:
            self.persistence.vhost_metadata_saved(name, metadata)

    def apply_vhost_metadata(self, name: str, metadata: dict[str, Any]) -> None:
        """A vhost's metadata in memory (recovery's, or a change already stored): its default queue type
        reaches the vhost's queue.declare."""
        self.vhost_metadata[name] = metadata
        vhost = self.vhosts.get(name)
        if vhost is not None:
            queue_type = metadata.get("default_queue_type")
            vhost.default_queue_type = queue_type if isinstance(queue_type, str) and queue_type else None

    def store_permission(self, user: str, vhost: str) -> None:
        """Write one permission as it stands now to the store (recovery's configured grants)."""
        self._access_changed(Change.PERMISSION, (user, vhost))

    def _access_changed(self, change: Change, key: tuple[str, ...]) -> None:
        """Mirror one user or permission change into the store; only hashes are stored, as RabbitMQ does."""
        persistence = self.persistence
        if persistence is None:
            return
        access = self.access
        if change is Change.USER:
            user = access.users.get(key[0])
            if user is None:
                persistence.user_deleted(key[0])
            else:
                persistence.user_saved(
                    user.name, None, (user.password_hash, user.hashing_algorithm), user.tags
                )
        elif change is Change.PERMISSION:
            permission = access.permissions.get((key[0], key[1]))
            if permission is None:
                persistence.permission_cleared(key[0], key[1])
            else:
                persistence.permission_saved(
                    key[0], key[1], permission.configure, permission.write, permission.read
                )
        else:
            topic = access.topic_permissions.get((key[0], key[1], key[2]))
            if topic is None:
                persistence.topic_permission_cleared(key[0], key[1], key[2])
            else:
                persistence.topic_permission_saved(key[0], key[1], key[2], topic.write, topic.read)

    def set_header_rewriter(self, rewrite: HeaderRewriter) -> None:
        """Install the content-header rewriter (the session layer's) in the broker and every vhost."""
        self.rewrite_header = rewrite
        for vhost in self.vhosts.values():
            vhost.rewrite_header = rewrite

    def authenticate(self, username: str, password: str) -> bool:
        return self.access.authenticate(username, password) is not None

    # -- policies, limits and parameters (each change is stored and, for policies, applied at once)

    def put_policy(self, policy: Policy, operator: bool = False) -> None:
        self.policies.put(policy, operator)
        self._store_parameter(policy.vhost, _component(operator), policy.name, policy.as_json())
        vhost = self.vhosts.get(policy.vhost)
        changed = vhost.policies_changed() if vhost is not None else []
        lifecycle_notices.policy_set(self.events, policy, operator, changed)

    def delete_policy(self, vhost_name: str, name: str, operator: bool = False) -> bool:
        if self.policies.delete(vhost_name, name, operator) is None:
            return False
        self._store_parameter(vhost_name, _component(operator), name, None)
        vhost = self.vhosts.get(vhost_name)
        changed = vhost.policies_changed() if vhost is not None else []
        lifecycle_notices.policy_cleared(self.events, vhost_name, name, operator, changed)
        return True

    def set_vhost_limits(self, vhost: str, limits: Mapping[str, Any] | None) -> None:
        """Replace (None: remove) the vhost-limits parameter of ``vhost``."""
        if limits is None:
            had = self.parameters.clear_vhost_limits(vhost)
        else:
            self.parameters.set_vhost_limits(vhost, limits)
        self._store_parameter(vhost, "vhost-limits", "limits", self.parameters.vhost_limits.get(vhost))
        if limits is not None or had:
            lifecycle_notices.vhost_limits(self.events, vhost, self.parameters.vhost_limits.get(vhost))

    def set_user_limits(self, user: str, limits: Mapping[str, int]) -> None:
        """Replace a user's limits (checked by the caller); KeyError when there is no such user."""
        held = self.access.users[user].limits
        held.clear()
        held.update(limits)
        self._store_parameter("", "user-limits", user, dict(limits) if limits else None)
        lifecycle_notices.user_limits(self.events, user, limits)

    def set_global_parameter(self, name: str, value: Any, notify: bool = True) -> None:
        """Set a global parameter; ``notify`` False for what RabbitMQ sets at boot, before any listener."""
        self.parameters.set_global(name, value)
        self._store_parameter("", "global", name, value)
        if notify:
            lifecycle_notices.global_parameter(self.events, name, value)

    def clear_global_parameter(self, name: str) -> bool:
        if not self.parameters.clear_global(name):
            return False
        self._store_parameter("", "global", name, None)
        lifecycle_notices.global_parameter(self.events, name, None, cleared=True)
        return True

    def _store_parameter(self, vhost: str, component: str, name: str, value: Any) -> None:
        if self.persistence is not None:
            self.persistence.parameter_saved(vhost, component, name, value)


def _component(operator: bool) -> str:
    return "operator_policy" if operator else "policy"
