"""Users, tags, vhost and topic permissions, and the one `authorize()` decision AMQP and HTTP share.

Pure: no I/O, no clock. Mirrors rabbit_auth_backend_internal: passwords are kept only as RabbitMQ password
hashes (broker.core.access.passwords), permissions are three regexes per (user, vhost) matched unanchored
against the resource name (re:run), an empty regex matches nothing ("^$"), and topic permissions apply to
routing keys of topic exchanges only when the user has one for that exchange. ``version`` increases on every
change, so a channel can cache decisions and drop its cache when the number moves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, NamedTuple

from broker.core.access.passwords import ALGORITHMS, DEFAULT_ALGORITHM, check_password, hash_password
from broker.core.access.pcre_errors import pcre_reason
from broker.core.access.refusals import DEFAULT_EXCHANGE_NAME, refusal

Permission = Literal["configure", "write", "read"]
# RabbitMQ's resource kinds (rabbit_types:resource_kind()).
ResourceKind = Literal["exchange", "queue", "topic"]
# The tags the management plugin gives meaning to; other tags are kept and shown, with no effect.
ADMINISTRATOR = "administrator"
MONITORING = "monitoring"
POLICYMAKER = "policymaker"
MANAGEMENT = "management"
IMPERSONATOR = "impersonator"
_MANAGEMENT_TAGS = frozenset({ADMINISTRATOR, MONITORING, POLICYMAKER, MANAGEMENT})


class AccessError(ValueError):
    """A change the access model refuses; ``reason`` is RabbitMQ's reason term as the HTTP API prints it."""

    def __init__(self, reason: object) -> None:
        super().__init__(str(reason))
        self.reason = reason


class Change(Enum):
    """What a change touched, for whoever mirrors users and permissions into a store."""

    USER = "user"
    PERMISSION = "permission"
    TOPIC_PERMISSION = "topic_permission"


def _compile(pattern: str, topic: bool = False) -> re.Pattern[str]:
    """A permission regex as RabbitMQ applies it; an invalid one is refused with RabbitMQ's reason term,
    ``{invalid_regexp, Regexp, {Message, Offset}}`` as rabbit_json writes it: the message a charlist (a list
    of integers), the pattern one too for vhost permissions (rabbit_auth_backend_internal compiles
    binary_to_list of it) and a binary (a string) for topic permissions."""
    try:
        return re.compile(pattern if pattern else "^$")
    except re.error as error:
        message, offset = pcre_reason(pattern, error)
        shown: object = pattern if topic else list(pattern.encode())
        raise AccessError(["invalid_regexp", shown, [list(message.encode()), offset]]) from None


class User:
    """A user as rabbit_auth_backend_internal keeps it. Its fields are not reassigned (``put_user`` makes a
    new one); ``limits`` is changed in place (broker.set_user_limits, recovery). No dataclasses in this
    module: their generated methods are compiled at every start."""

    __slots__ = ("hashing_algorithm", "limits", "name", "password_hash", "tags")

    def __init__(
        self,
        name: str,
        password_hash: str,  # "" = cannot log in with a password (RabbitMQ: password_hash "")
        hashing_algorithm: str = DEFAULT_ALGORITHM,
        tags: tuple[str, ...] = (),
        limits: dict[str, int] | None = None,
    ) -> None:
        self.name = name
        self.password_hash = password_hash
        self.hashing_algorithm = hashing_algorithm
        self.tags = tags
        self.limits: dict[str, int] = {} if limits is None else limits

    def __repr__(self) -> str:
        # Not the hash: a repr ends up in logs and test reports.
        return f"User(name={self.name!r}, tags={self.tags!r}, limits={self.limits!r})"

    @property
    def is_administrator(self) -> bool:
        return ADMINISTRATOR in self.tags

    @property
    def is_monitor(self) -> bool:
        # rabbit_mgmt_util:is_monitor: administrator or monitoring.
        return ADMINISTRATOR in self.tags or MONITORING in self.tags

    @property
    def is_policymaker(self) -> bool:
        return ADMINISTRATOR in self.tags or POLICYMAKER in self.tags

    @property
    def is_management(self) -> bool:
        """May use the management API at all (rabbit_mgmt_util:is_mgmt_user)."""
        return any(tag in _MANAGEMENT_TAGS for tag in self.tags)


class VhostPermission(NamedTuple):
    user: str
    vhost: str
    configure: str
    write: str
    read: str
    # The three regexes compiled from configure, write and read.
    compiled: tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]

    def pattern(self, permission: Permission) -> re.Pattern[str]:
        return self.compiled[_INDEX[permission]]


class TopicPermission(NamedTuple):
    user: str
    vhost: str
    exchange: str
    write: str
    read: str
    compiled: tuple[re.Pattern[str], re.Pattern[str]]  # from write and read


_INDEX = {"configure": 0, "write": 1, "read": 2}


def parse_tags(tags: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Tags as the HTTP API and definitions give them: a comma-separated string or a list."""
    if tags is None:
        return ()
    items = tags.split(",") if isinstance(tags, str) else [str(tag) for tag in tags]
    return tuple(tag.strip() for tag in items if tag.strip())


class AccessControl:
    """The internal user database and its permission tables (rabbit_auth_backend_internal)."""

    def __init__(self) -> None:
        self.users: dict[str, User] = {}
        self.permissions: dict[tuple[str, str], VhostPermission] = {}
        self.topic_permissions: dict[tuple[str, str, str], TopicPermission] = {}
        self.version = 0
        # False only for `--planes off` (the baseline of warrenmq bench --plane-cost): every check passes.
        self.enforced = True
        # 403 texts name the permission first, as 4.x words them (the profile's permission_in_refusals).
        self.permission_first_in_refusals = False
        # Told what changed (a user's name, (user, vhost), or (user, vhost, exchange)), so the broker can
        # mirror the change into its store; not told of a vhost's deletion, which the store handles whole.
        self.on_change: Callable[[Change, tuple[str, ...]], None] | None = None
        # Told each permission change as rabbit_auth_backend_internal notifies it (the event bus's notify).
        self.notify: Callable[[str, dict[str, Any]], None] | None = None

    def _changed(self, change: Change | None = None, key: tuple[str, ...] = ()) -> None:
        self.version += 1
        if change is not None and self.on_change is not None:
            self.on_change(change, key)

    # -- users

    def put_user(
        self,
        name: str,
        *,
        password: str | None = None,
        password_hash: str | None = None,
        hashing_algorithm: str = DEFAULT_ALGORITHM,
        tags: tuple[str, ...] = (),
        salt: bytes | None = None,
    ) -> User:
        """Create or replace a user from a plain password (hashed here, as RabbitMQ stores it) or a hash.
        Neither: the user cannot log in with a password."""
        if hashing_algorithm not in ALGORITHMS:
            raise AccessError(f"unknown hashing algorithm {hashing_algorithm}")
        if password is not None:
            stored = hash_password(password, hashing_algorithm, salt)
        else:
            stored = password_hash or ""
        previous = self.users.get(name)
        user = User(name, stored, hashing_algorithm, tags, dict(previous.limits) if previous else {})
        self.users[name] = user
        self._changed(Change.USER, (name,))
        return user

    def delete_user(self, name: str) -> bool:
        """Delete a user with its permissions and topic permissions; False if there was none."""
        if self.users.pop(name, None) is None:
            return False
        for key in [key for key in self.permissions if key[0] == name]:
            del self.permissions[key]
        for tkey in [tkey for tkey in self.topic_permissions if tkey[0] == name]:
            del self.topic_permissions[tkey]
        self._changed(Change.USER, (name,))  # the store drops the user's permissions with it
        return True

    def authenticate(self, name: str, password: str) -> User | None:
        user = self.users.get(name)
        if user is None or not user.password_hash:
            return None
        return user if check_password(password, user.password_hash, user.hashing_algorithm) else None

    def users_without_permissions(self) -> list[User]:
        granted = {user for user, _ in self.permissions}
        return [user for name, user in sorted(self.users.items()) if name not in granted]

    # -- permissions

    def set_permission(self, user: str, vhost: str, configure: str, write: str, read: str) -> VhostPermission:
        """Set a user's permissions in a vhost; invalid regexes are refused before anything changes."""
        compiled = (_compile(configure), _compile(write), _compile(read))
        permission = VhostPermission(user, vhost, configure, write, read, compiled)
        self.permissions[(user, vhost)] = permission
        self._changed(Change.PERMISSION, (user, vhost))
        if self.notify is not None:
            fields = {"user": user, "vhost": vhost, "configure": configure, "write": write, "read": read}
            self.notify("permission.created", fields)
        return permission

    def clear_permission(self, user: str, vhost: str) -> bool:
        if self.permissions.pop((user, vhost), None) is None:
            return False
        self._changed(Change.PERMISSION, (user, vhost))
        if self.notify is not None:
            self.notify("permission.deleted", {"user": user, "vhost": vhost})
        return True

    def set_topic_permission(
        self, user: str, vhost: str, exchange: str, write: str, read: str
    ) -> TopicPermission:
        compiled = (_compile(write, topic=True), _compile(read, topic=True))
        permission = TopicPermission(user, vhost, exchange, write, read, compiled)
        self.topic_permissions[(user, vhost, exchange)] = permission
        self._changed(Change.TOPIC_PERMISSION, (user, vhost, exchange))
        if self.notify is not None:
            fields = {"user": user, "vhost": vhost, "exchange": exchange, "write": write, "read": read}
            self.notify("topic.permission.created", fields)
        return permission

    def clear_topic_permissions(self, user: str, vhost: str, exchange: str | None = None) -> bool:
        """Clear one exchange's topic permission, or all of the user's in the vhost (``exchange`` None)."""
        keys = [
            key
            for key in self.topic_permissions
            if key[0] == user and key[1] == vhost and (exchange is None or key[2] == exchange)
        ]
        for key in keys:
            del self.topic_permissions[key]
            self._changed(Change.TOPIC_PERMISSION, key)
        if keys and self.notify is not None:
            # RabbitMQ 3.10 notifies clearing one exchange's topic permission as permission_deleted.
            name = "topic.permission.deleted" if exchange is None else "permission.deleted"
            self.notify(name, {"user": user, "vhost": vhost})
        return bool(keys)

    def vhost_deleted(self, vhost: str) -> None:
        """RabbitMQ drops a deleted vhost's permissions with it, each notified (rabbit_vhost:delete clears
        the permissions, then the topic permissions, one notice per entry)."""
        for key in [key for key in self.permissions if key[1] == vhost]:
            del self.permissions[key]
            if self.notify is not None:
                self.notify("permission.deleted", {"user": key[0], "vhost": vhost})
        for tkey in [tkey for tkey in self.topic_permissions if tkey[1] == vhost]:
            del self.topic_permissions[tkey]
            if self.notify is not None:
                self.notify("topic.permission.deleted", {"user": tkey[0], "vhost": vhost})
        self._changed()

    def login_vhosts(self, user: str) -> list[str]:
        """The vhosts a user has permissions in (rabbit_mgmt_util:list_login_vhosts)."""
        return sorted(vhost for name, vhost in self.permissions if name == user)

    def can_access_vhost(self, user: str, vhost: str) -> bool:
        """connection.open's check: any permission entry for the vhost (check_vhost_access)."""
        return (user, vhost) in self.permissions

    # -- the decision

    def authorize(
        self, user: str, vhost: str, resource_kind: ResourceKind, name: str, permission: Permission
    ) -> bool:
        """May ``user`` exercise ``permission`` on the exchange or queue ``name`` of ``vhost``?

        The default exchange is checked as "amq.default" (rabbit_channel). ``resource_kind`` is "exchange"
        or "queue"; both use the same regexes, as in RabbitMQ; "topic" goes through `authorize_topic`.
        """
        if not self.enforced:
            return True
        entry = self.permissions.get((user, vhost))
        if entry is None:
            return False
        if resource_kind == "exchange" and name == "":
            name = DEFAULT_EXCHANGE_NAME
        return entry.pattern(permission).search(name) is not None

    def authorize_topic(
        self, user: str, vhost: str, exchange: str, routing_key: str, permission: Literal["write", "read"]
    ) -> bool:
        """Topic authorisation (rabbit_auth_backend_internal:check_topic_access): allowed unless the user has
        a topic permission for this exchange whose regex, with {username} and {vhost} expanded, misses the
        key.
        """
        entry = self.topic_permissions.get((user, vhost, exchange))
        if entry is None or not self.enforced:
            return True
        raw = entry.write if permission == "write" else entry.read
        if "{" in raw:
            expanded = raw.replace("{username}", re.escape(user)).replace("{vhost}", re.escape(vhost))
            return re.search(expanded if expanded else "^$", routing_key) is not None
        pattern = entry.compiled[0 if permission == "write" else 1]
        return pattern.search(routing_key) is not None

    def has_topic_permission(self, user: str, vhost: str, exchange: str) -> bool:
        """Are routing keys on ``exchange`` checked for ``user`` (a topic permission names it)?"""
        return (user, vhost, exchange) in self.topic_permissions

    def refused_text(
        self, user: str, vhost: str, resource_kind: ResourceKind, name: str, permission: Permission
    ) -> str:
        """RabbitMQ's 403 text for a refused decision (rabbit_access_control:check_resource_access)."""
        return "ACCESS_REFUSED - " + refusal(
            user, vhost, resource_kind, name, permission, self.permission_first_in_refusals
        )


class DecisionCache:
    """One channel's remembered `authorize()` answers (docs/architecture.md, control planes): a dict lookup
    per check on the publish path, dropped as a whole when the access model's ``version`` moves (any user or
    permission change)."""

    __slots__ = ("_access", "_decisions", "_topics", "_user", "_version", "_vhost", "control", "publishable")

    def __init__(self, access: AccessControl, user: str, vhost: str) -> None:
        self._access = access
        self._user = user
        self._vhost = vhost
        self._decisions: dict[tuple[str, str, str], bool] = {}
        # Exchange -> whether a topic permission governs its routing keys for this user.
        self._topics: dict[str, bool] = {}
        self._version = access.version
        # The publish fast path (one dict lookup, no call): exchange -> the ``control.version`` at which a
        # publish to it needed no check but write (allowed, no topic permission); stale once it moves.
        self.control = access
        self.publishable: dict[str, int] = {}

    @property
    def user(self) -> str:
        return self._user

    @property
    def vhost(self) -> str:
        return self._vhost

    def _refresh(self) -> None:
        self._decisions.clear()
        self._topics.clear()
        self._version = self._access.version

    def allowed(self, resource_kind: ResourceKind, name: str, permission: Permission) -> bool:
        if self._version != self._access.version:
            self._refresh()
        key = (resource_kind, name, permission)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._access.authorize(self._user, self._vhost, resource_kind, name, permission)
            self._decisions[key] = decision
        return decision

    def topic_governed(self, exchange: str) -> bool:
        """Does a topic permission apply to ``exchange``'s routing keys? (Cached: the publish path asks it
        per message and looks the exchange's type up only when the answer is yes.)"""
        if self._version != self._access.version:
            self._refresh()
        governed = self._topics.get(exchange)
        if governed is None:
            governed = self._topics[exchange] = self._access.has_topic_permission(
                self._user, self._vhost, exchange
            )
        return governed

    def topic_allowed(self, exchange: str, routing_key: str, permission: Literal["write", "read"]) -> bool:
        """Routing keys are unbounded, so only "no topic permission here" is cached, not each key."""
        if not self.topic_governed(exchange):
            return True
        return self._access.authorize_topic(self._user, self._vhost, exchange, routing_key, permission)
