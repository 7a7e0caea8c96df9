"""The `Exchange` entity: its declared properties, its routing state, and RabbitMQ's declare-time checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from broker.core.exchanges.base import ExchangeType
from broker.core.exchanges.default import DefaultExchangeType
from broker.core.exchanges.registry import EXCHANGE_TYPES
from broker.core.model.arguments import amqp_type_name, as_text, is_amqp_string
from broker.core.model.equivalence import MISSING, Atom, check_arg_equivalence, inequivalent, quoted
from broker.core.model.stats import ExchangeStats
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.model.profile import Profile

ALTERNATE_EXCHANGE = "alternate-exchange"
RESERVED_PREFIX = "amq."

# rabbit_exchange:assert_args_equivalence: "The only arg we care about is alternate-exchange".
_EQUIVALENCE_KEYS = (ALTERNATE_EXCHANGE,)


class Exchange:
    """One exchange of a vhost. Hashable by identity (bindings and the router's visited set key on it).

    ``kind`` is the type's routing state. ``e2e_bindings`` counts bindings from this exchange to other
    exchanges; `BindingTable` maintains it so the router can skip the exchange-to-exchange walk when it is 0.
    """

    __slots__ = (
        "_alternate_exchange",
        "_policy_alternate_exchange",
        "arguments",
        "auto_delete",
        "durable",
        "e2e_bindings",
        "internal",
        "kind",
        "name",
        "operator_policy",
        "policy",
        "stats",
        "type_name",
    )

    def __init__(
        self,
        name: str,
        type_name: str,
        kind: ExchangeType,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.type_name = type_name
        self.kind = kind
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments: dict[str, Any] = dict(arguments) if arguments else {}
        self.e2e_bindings = 0
        self.stats = ExchangeStats()
        self._policy_alternate_exchange: str | None = None
        # The policy and operator policy applying (broker.core.policies.policies.Policy), set by policy_apply.
        self.policy: Any = None
        self.operator_policy: Any = None
        self._alternate_exchange = self._resolve_alternate_exchange()

    @property
    def is_default(self) -> bool:
        return self.name == ""

    @property
    def alternate_exchange(self) -> str | None:
        """The AE name: the ``alternate-exchange`` argument (a string), else the policy's (the argument wins,
        docs/ae.md). The default exchange has none ("it does not support the alternate exchange feature")."""
        return self._alternate_exchange

    def set_policy_alternate_exchange(self, name: str | None) -> None:
        """Called by the vhost when the policy applying to this exchange changes."""
        self._policy_alternate_exchange = name
        self._alternate_exchange = self._resolve_alternate_exchange()

    def _resolve_alternate_exchange(self) -> str | None:
        if self.name == "":
            return None
        value = self.arguments.get(ALTERNATE_EXCHANGE)
        if isinstance(value, str | bytes):
            return as_text(value)
        return self._policy_alternate_exchange

    def check_equivalent(
        self,
        type_name: str,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: Mapping[str, Any] | None,
        vhost: str,
    ) -> None:
        """exchange.declare of an existing exchange: raise 406 at the first difference, in RabbitMQ's order
        (rabbit_exchange:assert_equivalence: type, durable, auto_delete, internal, then the arguments).

        Texts checked against RabbitMQ 3.10.8, e.g. "inequivalent arg 'durable' for exchange 'x' in vhost '/':
        received 'true' but current is 'false'". A passive declare does not call this (RabbitMQ skips it too).
        """
        where = f"exchange '{self.name}' in vhost '{vhost}'"
        for field, current, received in (
            ("type", Atom(self.type_name), Atom(type_name)),
            ("durable", self.durable, durable),
            ("auto_delete", self.auto_delete, auto_delete),
            ("internal", self.internal, internal),
        ):
            if current != received:
                raise inequivalent(field, where, quoted(received), quoted(current))
        requested = arguments or {}
        for key in _EQUIVALENCE_KEYS:
            check_arg_equivalence(key, self.arguments.get(key, MISSING), requested.get(key, MISSING), where)

    def __repr__(self) -> str:
        return f"Exchange({self.name!r}, {self.type_name!r})"


def is_reserved_name(name: str) -> bool:
    """Names starting "amq." cannot be declared by clients (403, see `reserved_name_error`)."""
    return name.startswith(RESERVED_PREFIX)


def reserved_name_error(kind: str, name: str) -> ChannelError:
    """rabbit_channel:check_name/2 for a new ``kind`` ("exchange" or "queue") named "amq.*" (3.10.8)."""
    return ChannelError(ReplyCode.ACCESS_REFUSED, f"{kind} name '{name}' contains reserved prefix 'amq.*'")


def system_exchange_deletion_error(name: str, vhost: str) -> ChannelError:
    """exchange.delete of any "amq.…" name, existing or not (rabbit_channel:check_exchange_deletion/1)."""
    return ChannelError(
        ReplyCode.ACCESS_REFUSED, f"deletion of system exchange '{name}' in vhost '{vhost}' not allowed"
    )


def check_exchange_type(type_name: str, disabled: frozenset[str] = frozenset()) -> type[ExchangeType]:
    """The class for a declarable type name, else 406 "unknown exchange type 'x'".

    RabbitMQ checks the type first on every exchange.declare, before name, permissions and equivalence
    (rabbit_channel -> rabbit_exchange:check_type/1). Since 3.12.x/3.13.x (rabbitmq-server PR #11214) that
    is a 406 channel error; RabbitMQ 3.10 (Debian 12's 3.10.8) closes the CONNECTION with 503
    COMMAND_INVALID, text "unknown exchange type 'x'" (or "invalid exchange type 'x'" when the name happens
    to be an existing atom).

    A plugin type whose plugin is not enabled (``disabled``) is unknown, as on a RabbitMQ node without the
    plugin (checked against 3.10.8: "unknown exchange type 'x-consistent-hash'").
    """
    cls = EXCHANGE_TYPES.get(type_name)
    if cls is None or type_name in disabled:
        raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"unknown exchange type '{type_name}'")
    return cls


def check_alternate_exchange_argument(name: str, arguments: Mapping[str, Any] | None, vhost: str) -> None:
    """A NEW exchange's ``alternate-exchange`` argument must be a longstr (rabbit_channel exchange.declare via
    rabbit_misc:r_arg), e.g. "invalid type 'signedint' for arg 'alternate-exchange' in exchange 'x' in
    vhost '/'"."""
    if not arguments or ALTERNATE_EXCHANGE not in arguments:
        return
    value = arguments[ALTERNATE_EXCHANGE]
    if not is_amqp_string(value):
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid type '{amqp_type_name(value)}' for arg '{ALTERNATE_EXCHANGE}' "
            f"in exchange '{name}' in vhost '{vhost}'",
        )


def create_exchange(
    name: str,
    type_name: str,
    durable: bool = False,
    auto_delete: bool = False,
    internal: bool = False,
    arguments: Mapping[str, Any] | None = None,
    lookup_queue: Callable[[str], object | None] | None = None,
    vhost: str = "/",
    profile: Profile | None = None,
) -> Exchange:
    """A new exchange with fresh routing state, after RabbitMQ's checks for a new exchange, in its order:
    type (`check_exchange_type`), the ``alternate-exchange`` argument's type, then the type's ``validate``.
    The caller checks reserved names before (RabbitMQ: type, then name, then the AE argument).

    ``name == ""`` builds the default exchange, which routes by queue name through ``lookup_queue`` (without
    one it routes nothing until the caller sets ``kind``).
    """
    if name == "":
        return Exchange("", "direct", DefaultExchangeType(lookup_queue or _no_queue), durable=True)
    cls = check_exchange_type(type_name)
    check_alternate_exchange_argument(name, arguments, vhost)
    cls.validate(arguments or {})
    kind = cls()
    # Optional hook for types whose routing depends on the exchange's arguments (plugin types).
    configure = getattr(kind, "configure", None)
    if configure is not None:
        configure(arguments or {})
    # And for types whose routing differs between RabbitMQ releases (x-consistent-hash's hash-header).
    follow_profile = getattr(kind, "follow_profile", None)
    if follow_profile is not None and profile is not None:
        follow_profile(profile)
    return Exchange(name, type_name, kind, durable, auto_delete, internal, arguments)


def _no_queue(name: str) -> object | None:
    return None
