"""Recovery at start-up: the stored definitions first (vhosts, users, exchanges, queues, bindings), then each
durable queue's messages in publish order, all before the listener accepts a connection.

A message marked delivered (it was unacked when the broker stopped) comes back with redelivered=true, as
RabbitMQ's classic queues do. After a crash (the store was not closed cleanly) every recovered message comes
back redelivered, as rabbit_queue_index marks every message delivered at a dirty recovery: a delivery leaves
the broker before the batch holding its mark commits, so the marks cannot be trusted then. A quorum queue
keeps its delivery counts; a message still marked delivered counts one more return (its consumer is gone).
Then the messages durable delayed-message exchanges held (broker.storage.delayed_recovery). An entity the
broker now refuses (a changed profile, say) is logged and left in the store untouched, never deleted: the
next start with a fitting configuration gets it back.
"""

from __future__ import annotations

import json
import time

import structlog

from broker.core.access.access import ADMINISTRATOR, AccessError
from broker.core.broker import Broker
from broker.core.model.typed_json import decode_table
from broker.core.policies.policies import PolicyError, parse_policy
from broker.core.policies.runtime_parameters import ParameterError
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.queue_admin import recover_messages
from broker.core.queues.queue_features import TimedEnvelope
from broker.core.queues.queue_settings import QUORUM
from broker.core.streams.lookup import stream_of
from broker.storage.base import (
    KEY_SEQ_BITS,
    BindingRow,
    Definitions,
    MessageRow,
    ParameterRow,
    QueueRow,
    Store,
)
from broker.storage.delayed_recovery import recover_delayed
from broker.storage.quorum_recovery import quorum_envelopes
from broker.storage.stored_message import message_of
from broker.storage.writer import StoreWriter
from protocol.errors import AMQPError

log = structlog.get_logger("warrenmq.storage")

_SEQ_MASK = (1 << KEY_SEQ_BITS) - 1


class RecoveryReport:
    """What recovery brought back, for the ``recovered`` log line and the readiness line. (A plain class, not
    a dataclass: a dataclass's methods are compiled at every start.)"""

    __slots__ = (
        "auto_deleted", "bindings", "delayed", "exchanges", "messages", "queues", "redelivered", "skipped",
        "vhosts",
    )  # fmt: skip

    def __init__(
        self,
        vhosts: int = 0,
        exchanges: int = 0,
        queues: int = 0,
        bindings: int = 0,
        messages: int = 0,
        redelivered: int = 0,
        delayed: int = 0,
        skipped: int = 0,
        auto_deleted: int = 0,
    ) -> None:
        self.vhosts = vhosts
        self.exchanges = exchanges
        self.queues = queues
        self.bindings = bindings
        self.messages = messages
        self.redelivered = redelivered
        self.delayed = delayed
        self.skipped = skipped
        self.auto_deleted = auto_deleted

    def __eq__(self, other: object) -> bool:  # the recovery tests compare whole reports
        if not isinstance(other, RecoveryReport):
            return NotImplemented
        return self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as the dataclass was

    def __repr__(self) -> str:
        return "RecoveryReport(" + ", ".join(f"{key}={value}" for key, value in self.fields().items()) + ")"

    def fields(self) -> dict[str, int]:
        return {
            "vhosts": self.vhosts,
            "exchanges": self.exchanges,
            "queues": self.queues,
            "bindings": self.bindings,
            "messages": self.messages,
            "redelivered": self.redelivered,
            "delayed": self.delayed,
            "skipped": self.skipped,
            "auto_deleted": self.auto_deleted,
        }


def recover_access(broker: Broker, definitions: Definitions, report: RecoveryReport) -> None:
    """Users (hash and tags), permissions, topic permissions and vhost metadata, over what the configuration
    made: a stored user wins over a configured one of the same name."""
    for user in definitions.users:
        # A row without tags predates them (every user was an administrator then); migration 2 sets them.
        tags = tuple(json.loads(user.tags)) if user.tags is not None else (ADMINISTRATOR,)
        if user.password_hash is not None:
            broker.save_user(user.name, password_hash=(user.password_hash, user.algorithm or ""), tags=tags)
        else:
            broker.save_user(user.name, password=user.password, tags=tags)
    access = broker.access
    for permission in definitions.permissions:
        try:
            if permission.vhost in broker.vhosts:
                access.set_permission(
                    permission.user, permission.vhost, permission.configure, permission.write, permission.read
                )
        except AccessError as error:
            _skipped(report, "permission", permission.vhost, permission.user, error)
    for topic in definitions.topic_permissions:
        try:
            if topic.vhost in broker.vhosts:
                access.set_topic_permission(topic.user, topic.vhost, topic.exchange, topic.write, topic.read)
        except AccessError as error:
            _skipped(report, "topic permission", topic.vhost, topic.user, error)
    for name, metadata in definitions.vhost_metadata.items():
        if name in broker.vhosts:
            broker.apply_vhost_metadata(name, json.loads(metadata))


def store_configured_grants(broker: Broker, definitions: Definitions) -> None:
    """The configured users' full permissions on the configured vhosts go into the store when it has none
    for that pair yet, so a vhost that later comes back from the store alone still lets them in (RabbitMQ
    stores the default user's grant when it creates it)."""
    stored = {(permission.user, permission.vhost) for permission in definitions.permissions}
    for user, vhost in broker.configured_grants:
        if (user, vhost) not in stored and (user, vhost) in broker.access.permissions:
            broker.store_permission(user, vhost)


def recover(broker: Broker, store: Store, writer: StoreWriter) -> RecoveryReport:
    report = RecoveryReport()
    clean = store.begin()
    definitions = store.load()
    queues: list[tuple[Queue, QueueRow]] = []
    auto_deleted: set[tuple[str, str]] = set()
    writer.replaying = True
    try:
        for name in definitions.vhosts:
            broker.add_vhost(name)
            report.vhosts += 1
        recover_access(broker, definitions, report)
        for parameter in definitions.parameters:
            _restore_parameter(broker, parameter)
        for exchange in definitions.exchanges:
            vhost = broker.vhosts.get(exchange.vhost)
            try:
                if vhost is None:
                    raise LookupError(f"vhost '{exchange.vhost}' is not in the store")
                vhost.declare_exchange(
                    exchange.name,
                    exchange.type,
                    durable=True,
                    auto_delete=bool(exchange.auto_delete),
                    internal=bool(exchange.internal),
                    arguments=decode_table(exchange.arguments),
                )
                report.exchanges += 1
            except (AMQPError, LookupError) as error:
                _skipped(report, "exchange", exchange.vhost, exchange.name, error)
        for row in definitions.queues:
            vhost = broker.vhosts.get(row.vhost)
            if row.auto_delete and row.had_consumer:
                # Its consumers died with the broker, so it is deleted, as RabbitMQ 3.10.8 does after a crash
                # (an auto-delete queue that never had a consumer is recovered).
                writer.drop_stored_queue(row.id)  # with its bindings and messages
                auto_deleted.add((row.vhost, row.name))
                report.auto_deleted += 1
                continue
            try:
                if vhost is None:
                    raise LookupError(f"vhost '{row.vhost}' is not in the store")
                queue = vhost.declare_queue(
                    row.name,
                    None,
                    durable=True,
                    auto_delete=bool(row.auto_delete),
                    arguments=decode_table(row.arguments),
                    # amq.gen-… names were the server's own; any other name must not count as server-named,
                    # which quorum and stream queues refuse (they would not come back).
                    server_named=row.name.startswith("amq."),
                )
                queue.store_id = row.id
                queues.append((queue, row))
                report.queues += 1
            except (AMQPError, LookupError) as error:
                _skipped(report, "queue", row.vhost, row.name, error)
        # In RabbitMQ's binding order (lists:usort of #binding{source, key, destination}: exchanges before
        # queues), the order in which plugin types such as x-consistent-hash rebuild their state at boot.
        for binding in sorted(definitions.bindings, key=_boot_order):
            if binding.destination_type == "queue" and (binding.vhost, binding.destination) in auto_deleted:
                continue
            vhost = broker.vhosts.get(binding.vhost)
            try:
                if vhost is None:
                    raise LookupError(f"vhost '{binding.vhost}' is not in the store")
                arguments = decode_table(binding.arguments)
                if binding.destination_type == "exchange":
                    vhost.bind_exchange(binding.destination, binding.source, binding.routing_key, arguments)
                else:
                    vhost.bind_queue(
                        binding.destination, binding.source, binding.routing_key, arguments, None
                    )
                report.bindings += 1
            except (AMQPError, LookupError) as error:
                what = f"{binding.source} -> {binding.destination} ({binding.routing_key!r})"
                _skipped(report, "binding", binding.vhost, what, error)
    finally:
        writer.replaying = False
    store_configured_grants(broker, definitions)
    for queue, row in queues:
        stream = stream_of(queue)
        if stream is not None:
            from broker.storage.stream_recovery import recover_stream  # with the first stream only

            report.messages += recover_stream(queue, stream, store, writer)
            continue
        quorum = queue.features is not None and queue.features.settings.queue_type == QUORUM
        started = time.perf_counter()
        rows = list(store.messages(row.id))
        if rows and getattr(store, "on_disk", True):
            writer.io.recovered(rows, time.perf_counter() - started)
            # rabbit_variable_queue counts each message it reads back from disk as a disk read.
            queue.stats.disk_reads += len(rows)
        if quorum:
            envelopes, checked_out = quorum_envelopes(queue, rows, store.delivery_counts(row.id), clean)
        else:
            envelopes, checked_out = [_envelope(message, clean) for message in rows], []
            if not clean:
                # Every message comes back redelivered after a crash, and the mark is written too, as
                # rabbit_queue_index marks them delivered at a dirty recovery: a clean stop of this run before
                # they go out again must not bring them back unflagged.
                for message, envelope in zip(rows, envelopes, strict=True):
                    if not message[6]:
                        writer.message_delivered(queue, envelope)
        report.messages += len(rows)
        report.redelivered += sum(1 for envelope in envelopes if envelope.redelivered) + len(checked_out)
        if queue.features is None and any(isinstance(envelope, TimedEnvelope) for envelope in envelopes):
            # A plain queue tracked per-message deadlines (the expiration property) before the restart: the
            # recovered messages must still expire, so it takes the featured path again, as enqueue does.
            queue.use_features()
        recover_messages(queue, envelopes)
        if checked_out:
            queue.last_seq = max(queue.last_seq, checked_out[-1].seq)  # a new message never takes their key
            queue.requeue(checked_out)  # counted (and over x-delivery-limit dead-lettered) as a return
    report.delayed = recover_delayed(broker, store, clean)
    return report


def _restore_parameter(broker: Broker, row: ParameterRow) -> None:
    """A stored policy, limit or global parameter, back before the queues and exchanges it applies to."""
    try:
        value = json.loads(row.value)
        if row.component in ("policy", "operator_policy"):
            policy = parse_policy(row.vhost, row.name, value, row.component == "operator_policy")
            broker.policies.put(policy, row.component == "operator_policy")
        elif row.component == "vhost-limits":
            broker.parameters.set_vhost_limits(row.vhost, value)
        elif row.component == "user-limits":
            user = broker.access.users.get(row.name)
            if user is not None:
                user.limits.update(value)
        elif row.component == "global":
            broker.parameters.set_global(row.name, value)
    except (ValueError, PolicyError, ParameterError) as error:
        log.warning(
            "recovery.parameter_skipped",
            component=row.component,
            vhost=row.vhost,
            name=row.name,
            error=str(error),
        )


def _envelope(row: MessageRow, clean: bool) -> Envelope:
    key, exchange, routing_key, header, body, expires_at, delivered = row
    message = message_of(exchange, routing_key, header, body)
    seq = key & _SEQ_MASK
    redelivered = bool(delivered) or not clean
    if expires_at is not None:
        return TimedEnvelope(seq, message, expires_at, redelivered)
    return Envelope(seq, message, redelivered)


def _boot_order(binding: BindingRow) -> tuple[str, str, bytes, int, bytes]:
    """Erlang term order of the binding record within a vhost: source, key, then the destination resource
    (kind atom 'exchange' < 'queue', then name); binaries compare bytewise."""
    kind = 0 if binding.destination_type == "exchange" else 1
    return binding.vhost, binding.source, binding.routing_key.encode(), kind, binding.destination.encode()


def _skipped(report: RecoveryReport, kind: str, vhost: str, name: str, error: Exception) -> None:
    report.skipped += 1
    text = error.reply_text if isinstance(error, AMQPError) else str(error)
    log.error("recovery_skipped", kind=kind, vhost=vhost, name=name, reason=text)
