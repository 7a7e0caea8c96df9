"""The one place that says what the frame comparison ignores, and why.

``VOLATILE`` lists values that differ between any two runs or any two brokers and carry nothing a client can
depend on (names a broker or client makes up, clocks, the server's self-description). ``DEVIATIONS`` lists the
differences WarrenMQ keeps on purpose; each names its row in the table of docs/deviations.md
("Deliberate deviations"), with the profile it belongs to. Nothing else is hidden: every other argument, type,
flag, size and order is compared as sent.

Both lists work on decoded frame records (``wire.decode``); ``normalise_records`` applies them to both sides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]


# The oracle releases (tests/compat/conftest.py ``ORACLES``): a transcript is normalised for a comparison
# with one of them.
ORACLE_310 = "3.10"
ORACLE_40 = "4.0"
EVERY_ORACLE = frozenset({ORACLE_310, ORACLE_40})


@dataclass(frozen=True)
class Rule:
    """One normalisation: ``why`` is the reason (a deviation's: its docs/deviations.md row, profile). A
    deviation applies only in the comparisons with the ``oracles`` it is listed for: against another release
    the same frames are compared as sent."""

    name: str
    why: str
    apply: Callable[[Record], Record | None]  # None drops the frame
    oracles: frozenset[str] = EVERY_ORACLE


# -- generated names: replaced by a number in order of first appearance (the same name keeps its number) ----

GENERATED_NAMES = (
    # rabbit_guid: server-named queues and server-chosen consumer tags, random on every run.
    r"amq\.gen-[A-Za-z0-9_\-]+",
    r"amq\.ctag-[A-Za-z0-9_\-]+",
    # pika's consumer tags: "ctag" + channel number + "." + uuid4 hex, random on every run.
    r"ctag\d+\.[0-9a-f]{32}",
    # Direct reply-to names encode the node and channel pid (rabbit_direct_reply_to); opaque to clients. The
    # format is checked by the direct reply-to tests, not here.
    r"amq\.rabbitmq\.reply-to\.[A-Za-z0-9_.=+/\-]+",
)
_GENERATED = re.compile("|".join(f"({pattern})" for pattern in GENERATED_NAMES))
_KIND_OF = ("amq.gen", "amq.ctag", "ctag", "amq.rabbitmq.reply-to")


class Names:
    """Numbers generated names consistently across one broker's transcript of one scenario."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if self.prefix:
            value = value.replace(self.prefix, "P")
        return _GENERATED.sub(self._rename, value)

    def _rename(self, match: re.Match[str]) -> str:
        key = match.group(0)
        if key not in self.seen:
            kind = _KIND_OF[(match.lastindex or 1) - 1]
            count = sum(1 for name in self.seen.values() if name.startswith(kind + "#"))
            self.seen[key] = f"{kind}#{count}"
        return self.seen[key]


def rename_strings(value: Any, names: Names) -> Any:
    if isinstance(value, str):
        return names(value)
    if isinstance(value, list):
        return [rename_strings(item, names) for item in value]
    if isinstance(value, dict):
        return {key: rename_strings(item, names) for key, item in value.items()}
    return value


# -- connection.start: the server's self-description --------------------------------------------------------

# Keys of server-properties whose values describe the broker build, not the protocol: a client reads them for
# display and logs. Their presence, types and order are still compared; so is the capabilities table, in full.
SELF_DESCRIPTION = ("cluster_name", "copyright", "information", "platform", "product", "version")


def _server_properties(record: Record) -> Record:
    if record.get("method") != "Connection.Start":
        return record
    args = [
        [name, amqp_type, _masked(value) if name == "server_properties" else value]
        for name, amqp_type, value in record["args"]
    ]
    # The frame's size follows the lengths of those values.
    return {**record, "size": "<self-description>", "args": args}


def _mechanisms_as_set(record: Record) -> Record:
    """connection.start's ``mechanisms`` as a sorted list of its words."""
    if record.get("method") != "Connection.Start":
        return record
    args = []
    for name, amqp_type, value in record["args"]:
        kept = value
        if name == "mechanisms" and isinstance(value, str | bytes):
            words = value.split() if isinstance(value, str) else value.decode("latin-1").split()
            kept = " ".join(sorted(words))
        args.append([name, amqp_type, kept])
    return {**record, "args": args}


def _masked(table: list[Any]) -> list[Any]:
    return [
        [key, code, "<self-description>" if key in SELF_DESCRIPTION else item] for key, code, item in table
    ]


# -- clocks
# ---------------------------------------------------------------------------------------------------


def _timestamps(value: Any) -> Any:
    """Field-table timestamps (type ``T``, e.g. x-death's ``time``) read the broker's clock at the moment."""
    if isinstance(value, list):
        if len(value) == 3 and value[1] == "T" and isinstance(value[0], str):
            return [value[0], "T", "<time>"]
        return [_timestamps(item) for item in value]
    if isinstance(value, dict):
        return {key: _timestamps(item) for key, item in value.items()}
    return value


def _drop_heartbeats(record: Record) -> Record | None:
    return None if record["kind"] == "heartbeat" else record


# Frames recorded while a scenario's Ctx.close deletes what it declared are not compared: it deletes queues
# while consumers on the scenario's connections are still attached, and whether a broker's basic.cancel
# notification arrives before those connections close is a race (a stream queue's deletion on RabbitMQ goes
# through its stream coordinator first). Applied in compare._records, by the phase the proxy recorded.
CLEANUP = "cleanup"
# Likewise the frames of a part a scenario marks timing-dependent (kit.timing_dependent): e.g. two queues
# competing for one channel-wide prefetch credit, where RabbitMQ itself gives the freed credit to either.
NOT_COMPARED_PHASES = frozenset({CLEANUP, "racy"})

# The requests a scenario's poll repeats (kit.polling: "wait until the queue holds n messages"), and their
# answers.
POLL_METHODS = frozenset({"Queue.Declare", "Queue.DeclareOk"})


def _drop_polls(record: Record) -> Record | None:
    if not record.pop("polled", False):
        return record
    return None if record.get("method") in POLL_METHODS else record


def _reply_to_sizes(record: Record) -> Record:
    """A frame carrying a direct reply-to name is as long as the name, which encodes the node's name."""
    if "amq.rabbitmq.reply-to." in json.dumps(record, ensure_ascii=False) and "size" in record:
        return {**record, "size": "<reply-to name>"}
    return record


# The event exchange's messages (rabbitmq_event_exchange): their headers table always ends in timestamp_in_ms.
_EVENT_CLOCKS = frozenset({"timestamp_in_ms", "connected_at"})
_EVENT_PORTS = frozenset({"peer_port", "port"})
_PID = re.compile(r"<[^<>]+>")
_ADDRESS_PORT = re.compile(r"(\d+\.\d+\.\d+\.\d+):\d+")


def _event_table(record: Record) -> list[Any] | None:
    if record.get("kind") != "header":
        return None
    for name, _, value in record.get("props", []):
        if name == "headers" and any(entry[0] == "timestamp_in_ms" for entry in value):
            return list(value)
    return None


def _event_masked(key: str, code: str, value: Any) -> list[Any]:
    if key in _EVENT_CLOCKS:
        return [key, code, "<time>"]
    if key in _EVENT_PORTS:
        return [key, code, "<port>"]
    if key == "node":
        return [key, code, "<node>"]
    if key == "cluster_state":  # vhost events: {node name: state}
        return [key, code, [["<node>", *entry[1:]] for entry in value]]
    if isinstance(value, str):
        return [key, code, _ADDRESS_PORT.sub(r"\1:<port>", _PID.sub("<pid>", value))]
    return [key, code, value]


def _event_values(record: Record) -> Record:
    """An event's clock (timestamp_in_ms, connected_at, the timestamp property), the node's name, process ids
    and TCP ports: run-specific (the event exchange test compares their types)."""
    table = _event_table(record)
    if table is None:
        return record
    masked = [_event_masked(*entry) for entry in table]
    props = [
        ["headers", code, masked]
        if name == "headers"
        else [name, code, "<time>" if name == "timestamp" else v]
        for name, code, v in record["props"]
    ]
    return {**record, "props": props, "size": "<event>"}


VOLATILE: tuple[Rule, ...] = (
    Rule("direct reply-to frame sizes", _reply_to_sizes.__doc__ or "", _reply_to_sizes),
    Rule(
        "poll rounds",
        "a scenario that waits for the broker (kit.polling) repeats a passive queue.declare until the count "
        "it waits for shows: the number of rounds depends on timing",
        _drop_polls,
    ),
    Rule(
        "heartbeat frames",
        "sent when a connection is idle for half the interval: when they fall depends on timing, not on the "
        "scenario (their cadence has its own scenario, which keeps them)",
        _drop_heartbeats,
    ),
    Rule(
        "server self-description",
        f"connection.start server-properties {', '.join(SELF_DESCRIPTION)}: the build, not the protocol",
        _server_properties,
    ),
    Rule(
        "SASL mechanism order",
        "connection.start's mechanisms compared as a set: RabbitMQ 4.0.5 lists its registered mechanisms "
        "in an order that changes from one boot to the next (ANONYMOUS PLAIN AMQPLAIN, or ANONYMOUS "
        "AMQPLAIN PLAIN)",
        _mechanisms_as_set,
    ),
    Rule("field-table timestamps", "type T values in tables read the broker's clock", _timestamps),
    Rule("event exchange run values", _event_values.__doc__ or "", _event_values),
)

# -- deliberate deviations (docs/deviations.md "Deliberate deviations") --------------------------------------

# server-properties keys only WarrenMQ sends.
_EXTRA_SERVER_PROPERTIES = frozenset({"warrenmq_version"})


def _extra_server_properties(record: Record) -> Record:
    if record.get("method") != "Connection.Start":
        return record
    args = [
        [
            name,
            kind,
            [f for f in value if f[0] not in _EXTRA_SERVER_PROPERTIES]
            if name == "server_properties"
            else value,
        ]
        for name, kind, value in record["args"]
    ]
    return {**record, "args": args}


_LAST_DEATH = ("x-last-death-exchange", "x-last-death-queue", "x-last-death-reason")


def _x_death_313(record: Record) -> Record:
    """x-death as RabbitMQ 3.13 writes it, compared with 3.10's: drop the x-last-death-* headers (new in 3.13)
    and compare each x-death entry's keys in sorted order (3.13's death_table/7 always writes
    original-expiration first, then count, reason, queue, time, exchange, routing-keys; 3.10 appends
    original-expiration and re-sorts an entry's keys when it updates the count)."""
    if record.get("kind") != "header" or not any(p[0] == "headers" for p in record.get("props", [])):
        return record
    props = []
    changed = False
    for name, amqp_type, value in record["props"]:
        if name == "headers" and any(entry[0] == "x-death" for entry in value):
            changed = True
            props.append([name, amqp_type, [_sorted_deaths(e) for e in value if e[0] not in _LAST_DEATH]])
        else:
            props.append([name, amqp_type, value])
    return {**record, "props": props, "size": "<x-death>"} if changed else record


def _sorted_deaths(entry: list[Any]) -> list[Any]:
    key, code, value = entry
    if key != "x-death" or code != "A":
        return entry
    return [
        key,
        code,
        [
            ["F", sorted(table, key=lambda field: field[0])] if kind == "F" else [kind, table]
            for kind, table in value
        ],
    ]


def _unknown_exchange_type_313(record: Record) -> Record:
    """exchange.declare of an unknown type: 3.13's rabbit_exchange:check_type raises precondition_failed (406,
    a channel.close), 3.10's command_invalid (503, a connection.close); both become one refusal line."""
    if record.get("method") not in ("Channel.Close", "Connection.Close"):
        return record
    text = next((value for name, _, value in record["args"] if name == "reply_text"), "")
    if not isinstance(text, str) or " - unknown exchange type " not in text:
        return record
    reason = text.split(" - ", 1)[1]
    return {"kind": "method", "ch": 0, "method": "<refused: unknown exchange type>", "args": [reason]}


def _in_key_order(table: list[Any]) -> list[Any]:
    ordered: dict[str, list[Any]] = {}
    for key, code, value in table:
        ordered.setdefault(key, [key, code, _in_key_order(value) if code == "F" else value])
    return [ordered[key] for key in sorted(ordered)]


def _event_header_order(record: Record) -> Record:
    """An event's headers, and tables nested in them, in key order, each key once: RabbitMQ writes them in its
    event's proplist order (which differs per event type and release; an operator policy's value as apply-to,
    priority, definition, pattern), WarrenMQ sorted by key; queue.policy.cleared carries ``vhost`` twice in
    3.10 (the queue's info and the policy's), once in WarrenMQ. Keys, types and values are the same."""
    table = _event_table(record)
    if table is None:
        return record
    props = [
        [name, code, _in_key_order(value) if name == "headers" else value]
        for name, code, value in record["props"]
    ]
    return {**record, "props": props}


def _headers_in_key_order_40(record: Record) -> Record:
    """A content header's headers table in key order, and without ``CC`` beside an x-death: RabbitMQ 4.0.5
    delivered a message published with headers in another order with its keys sorted, and keeps ``CC`` on a
    message it dead-letters with x-dead-letter-routing-key, where WarrenMQ (as 3.x) keeps the publisher's
    order and removes ``CC``."""
    if record.get("kind") != "header" or not any(p[0] == "headers" for p in record.get("props", [])):
        return record
    props = []
    for name, amqp_type, value in record["props"]:
        if name == "headers":
            dead = any(entry[0] == "x-death" for entry in value)
            kept = [entry for entry in value if not (dead and entry[0] == "CC")]
            props.append([name, amqp_type, sorted(kept, key=lambda entry: str(entry[0]))])
        else:
            props.append([name, amqp_type, value])
    return {**record, "props": props, "size": "<headers>"}


DEVIATIONS: tuple[Rule, ...] = (
    Rule(
        "event exchange header order",
        "docs/deviations.md, Deliberate deviations: the order of an event's headers (all profiles). "
        + (_event_header_order.__doc__ or ""),
        _event_header_order,
    ),
    Rule(
        "unknown exchange type",
        "docs/deviations.md, Deliberate deviations: an unknown exchange type is 406 on the channel (profile "
        "rabbitmq-3.13; 3.10: 503 on the connection). " + (_unknown_exchange_type_313.__doc__ or ""),
        _unknown_exchange_type_313,
        oracles=frozenset({ORACLE_310}),
    ),
    Rule(
        "warrenmq_version in server-properties",
        "docs/deviations.md, Deliberate deviations: `warrenmq_version` in connection.start "
        "server-properties (all profiles): says what actually answers; clients read these keys for display "
        "only",
        _extra_server_properties,
    ),
    Rule(
        "x-death headers of RabbitMQ 3.13",
        "docs/deviations.md, Deliberate deviations: x-last-death-* headers and x-death key order "
        "(profile rabbitmq-3.13; the oracle is 3.10). " + (_x_death_313.__doc__ or ""),
        _x_death_313,
        oracles=frozenset({ORACLE_310}),
    ),
    Rule(
        "headers table order and CC on dead-lettering of RabbitMQ 4.0",
        "docs/deviations.md, Deliberate deviations: the order of a delivered message's headers, and CC on a "
        "message dead-lettered with x-dead-letter-routing-key (profile rabbitmq-4.0). "
        + (_headers_in_key_order_40.__doc__ or ""),
        _headers_in_key_order_40,
        oracles=frozenset({ORACLE_40}),
    ),
)


def normalise_record(
    record: Record, keep_heartbeats: bool = False, oracle: str = ORACLE_310
) -> Record | None:
    """Apply ``VOLATILE`` then the ``DEVIATIONS`` listed for ``oracle`` to one decoded frame; None when the
    frame is not compared. Generated names are renamed later, on the ordered view, so both sides number them
    in the same order."""
    current: Record | None = record
    for rule in (*VOLATILE, *DEVIATIONS):
        if current is None:
            return None
        if (keep_heartbeats and rule.apply is _drop_heartbeats) or oracle not in rule.oracles:
            continue
        current = rule.apply(current)
    return current
