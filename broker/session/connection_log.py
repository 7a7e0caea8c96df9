"""RabbitMQ's log lines for a connection's life and a channel's errors, with rabbit_reader's and
rabbit_channel's texts and levels (RabbitMQ 3.10):

- ``accepting AMQP connection <pid> (name)`` at the first bytes (info; debug when none ever came);
- ``connection <pid> (name): user 'u' authenticated and granted access to vhost 'v'`` at connection.open;
- ``closing AMQP connection <pid> (name, vhost: 'v', user: 'u')`` when a closed connection's socket goes
  (info), or with the reason on a second line: ``client unexpectedly closed TCP connection`` (warning),
  ``missed heartbeats from client, timeout: 60s`` (error);
- ``Error on AMQP connection <pid> (name, vhost: 'v', user: 'u', state: running), channel 0:`` and
  `` operation connection.open caused a connection exception not_allowed: "..."`` (error), and before the
  connection is open ``Error on AMQP connection <pid> (name, state: starting):`` with the refused login;
- ``Channel error on connection <pid> (name, vhost: 'v', user: 'u'), channel 1:`` and ``operation
  queue.declare caused a channel exception precondition_failed: ...`` (error).

Where RabbitMQ prints an Erlang term (handshake errors) the line names the same parts in the same shape.
One call per connection or channel event, none per message: the hot path never comes here. Every line
carries ``domain`` (broker.log_setup: RabbitMQ's text in plain form) and, for JSON, the connection's fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from pamqp.commands import INDEX_MAPPING

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort, ConnectionPort, HandshakePort
    from protocol.errors import AMQPError

CONNECTION = "rabbitmq.connection"
CHANNEL = "rabbitmq.channel"
log = structlog.get_logger("warrenmq.connection")


def method_name(class_id: int, method_id: int) -> str:
    """The method as RabbitMQ names it in errors ("queue.declare"); "none" when no method caused it."""
    command = INDEX_MAPPING.get((class_id << 16) | method_id) if class_id else None
    return "none" if command is None else str(getattr(command, "name", "none")).lower()


def error_name(error: AMQPError) -> str:
    """The reply code's name as rabbit_framing spells it ("precondition_failed")."""
    return error.code.name.lower()


def erlang_string(text: str) -> str:
    """A string as Erlang's ~p prints it: in double quotes, backslash and double quote escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def client_provided_name(conn: ConnectionPort) -> str | None:
    name = conn.client_properties.get("connection_name")
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return name if isinstance(name, str) and name else None


def _name(conn: ConnectionPort) -> str:
    """The connection's name in the log: "client -> server", then " - " and the name the client gave in
    its client properties (rabbit_reader's augment_connection_log_name)."""
    given = client_provided_name(conn)
    return conn.endpoint.name if given is None else f"{conn.endpoint.name} - {given}"


def _fields(conn: ConnectionPort) -> dict[str, Any]:
    fields: dict[str, Any] = {"pid": conn.pid, "connection": _name(conn)}
    if conn.username:
        fields["user"] = conn.username
    if conn.vhost is not None:
        fields["vhost"] = conn.vhost.name
    return fields


def _who(conn: ConnectionPort) -> str:
    """ "name, vhost: 'v', user: 'u'": vhost 'none' once a user logged in but before connection.open, as
    rabbit_reader's #connection{vhost = none} prints."""
    vhost = conn.vhost.name if conn.vhost is not None else "none"
    return f"{_name(conn)}, vhost: '{vhost}', user: '{conn.username}'"


def accepting(conn: ConnectionPort, data: bool = True) -> None:
    """rabbit_reader mainloop's first receive: info, or debug when the socket closed before any byte (a
    TCP health check)."""
    text = f"accepting AMQP connection {conn.pid} ({conn.endpoint.name})"
    (log.info if data else log.debug)(text, domain=CONNECTION, **_fields(conn))


def client_named(conn: ConnectionPort) -> None:
    """At start-ok, when the client properties carry connection_name."""
    log.info(
        f"connection {conn.pid} ({conn.endpoint.name}) has a client-provided name: "
        f"{client_provided_name(conn)}",
        domain=CONNECTION,
        **_fields(conn),
    )


def secret_updated(conn: ConnectionPort, reason: str) -> None:
    log.info(
        f"connection {conn.pid} ({_name(conn)}): user '{conn.username}' updated secret, reason: {reason}",
        domain=CONNECTION,
        **_fields(conn),
    )


def authenticated(conn: ConnectionPort) -> None:
    vhost = conn.vhost.name if conn.vhost is not None else ""
    log.info(
        f"connection {conn.pid} ({_name(conn)}): user '{conn.username}' authenticated and granted "
        f"access to vhost '{vhost}'",
        domain=CONNECTION,
        **_fields(conn),
    )


def closed(conn: HandshakePort, data_received: bool) -> None:
    """The socket is gone: rabbit_reader's last line, by the state the connection ended in."""
    state = conn.state.value
    name = _name(conn)
    fields = _fields(conn)
    # Closed by either side's connection.close (the broker's own close puts rabbit_reader in state closed
    # at once), or a refused login dropped: a normal end, whether or not close-ok came.
    if state in ("closed", "closing"):
        who = _who(conn) if conn.username else name
        log.info(f"closing AMQP connection {conn.pid} ({who})", domain=CONNECTION, **fields)
    elif not data_received:
        log.debug(
            f"closing AMQP connection {conn.pid} ({name}):\nconnection_closed_with_no_data_received",
            domain=CONNECTION,
            **fields,
        )
    else:
        who = _who(conn) if conn.username else name
        log.warning(
            f"closing AMQP connection {conn.pid} ({who}):\nclient unexpectedly closed TCP connection",
            domain=CONNECTION,
            **fields,
        )


def missed_heartbeats(conn: ConnectionPort, timeout_s: int) -> None:
    log.error(
        f"closing AMQP connection {conn.pid} ({_name(conn)}):\n"
        f"missed heartbeats from client, timeout: {timeout_s}s",
        domain=CONNECTION,
        **_fields(conn),
    )


def handshake_timeout(conn: HandshakePort) -> None:
    """rabbit_reader's {handshake_timeout, Callback}: waiting for the protocol header, or for a frame."""
    callback = "handshake" if conn.state.value == "pre_init" else "frame_header"
    log.error(
        f"closing AMQP connection {conn.pid} ({_name(conn)}):\n{{handshake_timeout,{callback}}}",
        domain=CONNECTION,
        **_fields(conn),
    )


def bad_header(conn: ConnectionPort, header: bytes) -> None:
    """A client that does not speak AMQP 0-9-1 (rabbit_reader's {bad_header, Header})."""
    head = header[:8]
    if all(32 <= byte < 127 for byte in head):
        shown = erlang_string(head.decode("ascii"))
    else:
        shown = ",".join(str(byte) for byte in head)
    log.error(
        f"closing AMQP connection {conn.pid} ({_name(conn)}):\n{{bad_header,<<{shown}>>}}",
        domain=CONNECTION,
        **_fields(conn),
    )


def login_refused(conn: HandshakePort, reason: str) -> None:
    """handle_exception/3 in state starting with access_refused: the reason only the log shows."""
    log.error(
        f"Error on AMQP connection {conn.pid} ({_name(conn)}, state: {conn.state.value}):\n{reason}",
        domain=CONNECTION,
        **_fields(conn),
    )


def connection_error(conn: HandshakePort, channel_id: int, error: AMQPError) -> None:
    """A connection exception (rabbit_reader's log_hard_error/3), before the close frame is sent; vhost
    refusals while opening (not_allowed) as their own clause prints them."""
    state = conn.state.value
    fields = {**_fields(conn), "code": int(error.code), "channel": channel_id}
    if state == "opening" and error_name(error) == "not_allowed":
        head = f"{_name(conn)}, user: '{conn.username}', state: {state}"
        log.error(f"Error on AMQP connection {conn.pid} ({head}):\n{error.text}", domain=CONNECTION, **fields)
        return
    operation = method_name(error.class_id, error.method_id)
    text = erlang_string(error.text)
    reason = f"operation {operation} caused a connection exception {error_name(error)}: {text}"
    if state in ("starting", "securing", "tuning", "opening"):
        reason = f"{{handshake_error,{state},{reason}}}"
    log.error(
        f"Error on AMQP connection {conn.pid} ({_who(conn)}, state: {state}), channel {channel_id}:\n"
        f" {reason}",
        domain=CONNECTION,
        **fields,
    )


def handshake_error(conn: HandshakePort, error: AMQPError) -> None:
    """An error RabbitMQ answers with silence before open (broker.session.preauth): its reader ends with
    {handshake_error, State, Channel, Reason}."""
    operation = method_name(error.class_id, error.method_id)
    log.error(
        f"closing AMQP connection {conn.pid} ({_name(conn)}):\n"
        f"{{handshake_error,{conn.state.value},0,{{amqp_error,{error_name(error)},"
        f"{erlang_string(error.text)},'{operation}'}}}}",
        domain=CONNECTION,
        code=int(error.code),
        **_fields(conn),
    )


def channel_error(channel: ChannelPort, error: AMQPError) -> None:
    """rabbit_channel:handle_exception/2 for a soft error, before its channel.close goes out."""
    conn = channel.conn
    operation = method_name(error.class_id, error.method_id)
    log.error(
        f"Channel error on connection {conn.pid} ({_who(conn)}), channel {channel.channel_id}:\n"
        f"operation {operation} caused a channel exception {error_name(error)}: {error.text}",
        domain=CHANNEL,
        channel=channel.channel_id,
        code=int(error.code),
        **_fields(conn),
    )


def closing_connection(conn: ConnectionPort, reason: str) -> None:
    """rabbit_networking:close_connection/2, an operator's close (management API, rabbitmqctl)."""
    log.info(
        f"Closing connection {conn.pid} because {erlang_string(reason)}", domain="rabbitmq", pid=conn.pid
    )
