"""Version profiles: the one table of behaviour that differs between RabbitMQ releases (reference §4).

Every field is one row of that table; the broker reads the active profile where the behaviour lives
(`--profile`, default rabbitmq-3.13). Adding a release is one `Profile(...)` entry.
"""

from __future__ import annotations

from typing import NamedTuple

MIB = 1024 * 1024


# A NamedTuple, not a dataclass: start-up cost.
class Profile(NamedTuple):
    name: str
    # max_message_size default: 128 MiB up to 3.13, 16 MiB since 4.0 (4.0 release notes).
    max_message_size: int
    # basic.qos global=true: a per-channel limit up to 4.2; 4.3 denies global_qos and treats it as false.
    global_qos: bool
    # Transient (non-durable) non-exclusive queues: allowed up to 4.2; 4.3 refuses them with 541.
    transient_nonexclusive_queues: bool
    # x-queue-mode: accepted (and ignored) up to 4.2; 4.3 removed CQv1 and refuses the argument.
    queue_mode_allowed: bool
    # Quorum queue delivery-limit when x-delivery-limit is absent: unlimited in 3.x, 20 since 4.0.
    quorum_delivery_limit: int | None
    # frame_max before connection.tune-ok: 4096 up to 4.0, 8192 since 4.1.
    pre_auth_frame_max: int
    # consumer_timeout for classic queues: checked up to 4.2; 4.3 checks quorum queues only (4.3.0 notes).
    consumer_timeout_classic: bool = True
    # Direct reply-to names that are not this node's are read with the v1 pid decoding, whose binary_to_term
    # crashes the channel (541) on a forged name, up to 4.1; 4.2's volatile queues refuse them as unknown.
    reply_to_v1_decoding: bool = True
    # The release reported as `version` in server-properties and the overview (the latest patch we follow).
    rabbitmq_version: str = "3.13.7"
    # x-consistent-hash with hash-header: 3.10 hashes rabbit_misc:table_lookup's {Type, Value} pair, 3.13 (mc)
    # the value alone, so the same header lands in other queues.
    hash_header_typed_pair: bool = False
    # connection.start's mechanisms, in the release's order: 3.x offers AMQPLAIN and PLAIN; 4.0 adds ANONYMOUS
    # (rabbit_auth_mechanism_anonymous, offered while anonymous_login_user is set, guest by default), as
    # RabbitMQ 4.0.5 sends them: "ANONYMOUS PLAIN AMQPLAIN". 4.3 keeps 4.0's default auth_mechanisms
    # (PLAIN, AMQPLAIN, ANONYMOUS) and rabbit_reader still lists them in the mechanism registry's order, so
    # it offers what 4.0.5 offers.
    sasl_mechanisms: str = "AMQPLAIN PLAIN"
    # basic.consume's refusals on a stream (no prefetch, auto-ack) name the queue "'queue 'q' in vhost 'v''"
    # and "stream queues queue 'q' ..." in 3.x; 4.0.5 says "stream queue 'q' in vhost 'v'" in both.
    stream_consume_names_stream_queue: bool = False
    # AMQP 1.0 on the AMQP port: a core protocol since 4.0 (3.x needed the rabbitmq_amqp1_0 plugin, which we
    # do not emulate: a 1.0 header gets the 0-9-1 header back, as a 3.x node without the plugin answers).
    amqp10: bool = False
    # A message dead-lettered with x-dead-letter-routing-key: 3.10's rabbit_dead_letter:make_msg removes its
    # CC header; the message-container rabbit_dead_letter:publish (3.13 on) only sets the routing keys to
    # [that key] and keeps the header (4.0.5 delivers it). Only the 4.x profiles follow it: the default
    # profile is held to the 3.10 oracle here (a listed deviation of the 3.13 profile).
    dead_letter_keeps_cc: bool = False
    # basic.nack and basic.reject of a stream delivery: 540 up to 3.13 (rabbit_stream_queue:settle took only
    # `complete`); in 4.0 "all settle reasons will give credit to the stream queue", as an ack does, and the
    # connection stays open.
    stream_settle_any_outcome: bool = False
    # A stream offset past the tail: 3.10.8 starts the consumer at the tail; 4.0.5 (a newer osiris) waits for
    # that offset and starts there (checked over AMQP 0-9-1 and 1.0); the 4.x profiles follow it.
    stream_offset_past_tail_waits: bool = False
    # A queue declared without x-queue-type: 4.0's rabbit_queue_type:inject_dqt writes the type into its
    # arguments (the vhost's default, else classic), so every queue lists x-queue-type in its arguments, in
    # the management API and in exported definitions.
    queue_type_in_arguments: bool = False
    # The management API's 4.0 shape: the overview's cluster_tags, node_tags, default_queue_type and
    # is_op_policy_updating_enabled, a node's being_drained, whoami's is_internal_user, a vhost's default type
    # "classic" (not "undefined"), bad credentials answered 401 "Not_Authorized" without a realm, HTTP
    # publishing refused with "write access to ..." and an unknown exchange 404, the mirrored-queue actions
    # (sync, cancel_sync) gone, and bulk-delete of an unknown user a no-op.
    management_4x: bool = False
    # basic.get from a quorum queue: 3.10.8's rabbit_quorum_queue:basic_get adds x-delivery-count 0 to a
    # message never returned; 4.0.5 adds the header only once the message has been returned.
    quorum_get_counts_from_zero: bool = True
    # 403 ACCESS_REFUSED texts: "access to queue 'q' ..." in 3.x, "configure access to queue 'q' ..." (the
    # permission first) in 4.0.5, over AMQP 0-9-1 and the HTTP API alike.
    permission_in_refusals: bool = False


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        # The Debian oracle's release: 3.13's rows but for those in docs/deviations.md's table.
        Profile(
            "rabbitmq-3.10",
            128 * MIB,
            True,
            True,
            True,
            None,
            4096,
            rabbitmq_version="3.10.8",
            hash_header_typed_pair=True,
        ),
        Profile("rabbitmq-3.13", 128 * MIB, True, True, True, None, 4096),
        Profile(
            "rabbitmq-4.0",
            16 * MIB,
            True,
            True,
            True,
            20,
            4096,
            rabbitmq_version="4.0.9",
            sasl_mechanisms="ANONYMOUS PLAIN AMQPLAIN",
            stream_consume_names_stream_queue=True,
            amqp10=True,
            dead_letter_keeps_cc=True,
            stream_settle_any_outcome=True,
            stream_offset_past_tail_waits=True,
            queue_type_in_arguments=True,
            management_4x=True,
            permission_in_refusals=True,
            quorum_get_counts_from_zero=False,
        ),
        Profile(
            "rabbitmq-4.3",
            16 * MIB,
            False,
            False,
            False,
            20,
            8192,
            consumer_timeout_classic=False,
            reply_to_v1_decoding=False,
            rabbitmq_version="4.3.0",
            sasl_mechanisms="ANONYMOUS PLAIN AMQPLAIN",
            amqp10=True,
            dead_letter_keeps_cc=True,
            stream_settle_any_outcome=True,
            stream_offset_past_tail_waits=True,
            queue_type_in_arguments=True,
            management_4x=True,
            permission_in_refusals=True,
            quorum_get_counts_from_zero=False,
        ),
    )
}
DEFAULT_PROFILE = PROFILES["rabbitmq-3.13"]

# The 541 text RabbitMQ 4.3 sends for a denied transient non-exclusive queue: the deprecated-features
# "when_denied" message of a denied_by_default feature (rabbit_deprecated_features:generate_warnings1).
TRANSIENT_NONEXCLUSIVE_DENIED = (
    "Feature `transient_nonexcl_queues` is deprecated.\n"
    "By default, this feature is not permitted anymore.\n"
    "The feature will be removed from a future major RabbitMQ version, regardless of the configuration; "
    "actual version to be determined.\n"
    "To continue using this feature when it is not permitted by default, set the following parameter in "
    "your configuration:\n"
    '    "deprecated_features.permit.transient_nonexcl_queues = true"'
)
