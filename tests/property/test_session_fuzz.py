"""Random frames into a live session: RabbitMQ-style typed errors or success, never a crash or a 541."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import commands

from protocol.codec import encode_method, make_method
from tests.component.harness import Client, close_of

_QUEUES = st.sampled_from(["q", "", "other", "amq.x"])
_EXCHANGES = st.sampled_from(["", "amq.direct", "amq.topic", "e", "amq.nope"])
_KEYS = st.sampled_from(["q", "", "#", "a.*", "other"])
_TAGS = st.integers(0, 5)
_FLAG = st.booleans()
_ARGS = st.sampled_from(
    [{}, {"x-match": "any"}, {"x-match": "bogus"}, {"alternate-exchange": "e"}, {"x-a": 1}]
)
_METHODS = st.one_of(
    st.builds(
        lambda q, p, d, e, a: make_method(
            commands.Queue.Declare, queue=q, passive=p, durable=d, exclusive=e, auto_delete=a
        ),
        _QUEUES,
        _FLAG,
        _FLAG,
        _FLAG,
        _FLAG,
    ),
    st.builds(
        lambda q, e, k, a: make_method(commands.Queue.Bind, queue=q, exchange=e, routing_key=k, arguments=a),
        _QUEUES,
        _EXCHANGES,
        _KEYS,
        _ARGS,
    ),
    st.builds(
        lambda q, e, k: make_method(commands.Queue.Unbind, queue=q, exchange=e, routing_key=k),
        _QUEUES,
        _EXCHANGES,
        _KEYS,
    ),
    st.builds(lambda q: make_method(commands.Queue.Purge, queue=q), _QUEUES),
    st.builds(
        lambda q, u, e: make_method(commands.Queue.Delete, queue=q, if_unused=u, if_empty=e),
        _QUEUES,
        _FLAG,
        _FLAG,
    ),
    st.builds(
        lambda e, t, p, a: make_method(
            commands.Exchange.Declare, exchange=e, exchange_type=t, passive=p, auto_delete=a
        ),
        _EXCHANGES,
        st.sampled_from(["direct", "topic", "fanout", "headers", "bogus"]),
        _FLAG,
        _FLAG,
    ),
    st.builds(lambda e, u: make_method(commands.Exchange.Delete, exchange=e, if_unused=u), _EXCHANGES, _FLAG),
    st.builds(
        lambda d, s, k: make_method(commands.Exchange.Bind, destination=d, source=s, routing_key=k),
        _EXCHANGES,
        _EXCHANGES,
        _KEYS,
    ),
    st.builds(
        lambda d, s, k: make_method(commands.Exchange.Unbind, destination=d, source=s, routing_key=k),
        _EXCHANGES,
        _EXCHANGES,
        _KEYS,
    ),
    st.builds(
        lambda n, g, z: make_method(commands.Basic.Qos, prefetch_count=n, global_=g, prefetch_size=z),
        st.integers(0, 3),
        _FLAG,
        st.sampled_from([0, 0, 0, 5]),
    ),
    st.builds(
        lambda q, t, n, x: make_method(
            commands.Basic.Consume, queue=q, consumer_tag=t, no_ack=n, exclusive=x
        ),
        _QUEUES,
        st.sampled_from(["", "c1", "c2"]),
        _FLAG,
        _FLAG,
    ),
    st.builds(
        lambda t: make_method(commands.Basic.Cancel, consumer_tag=t), st.sampled_from(["c1", "c2", "zz"])
    ),
    st.builds(lambda q, n: make_method(commands.Basic.Get, queue=q, no_ack=n), _QUEUES, _FLAG),
    st.builds(lambda t, m: make_method(commands.Basic.Ack, delivery_tag=t, multiple=m), _TAGS, _FLAG),
    st.builds(
        lambda t, m, r: make_method(commands.Basic.Nack, delivery_tag=t, multiple=m, requeue=r),
        _TAGS,
        _FLAG,
        _FLAG,
    ),
    st.builds(lambda t, r: make_method(commands.Basic.Reject, delivery_tag=t, requeue=r), _TAGS, _FLAG),
    st.builds(lambda r: make_method(commands.Basic.Recover, requeue=r), _FLAG),
    st.sampled_from(
        [
            make_method(commands.Confirm.Select),
            make_method(commands.Tx.Select),
            make_method(commands.Tx.Commit),
            make_method(commands.Tx.Rollback),
            make_method(commands.Channel.Open),
            make_method(commands.Channel.Close),
            make_method(commands.Channel.CloseOk),
            make_method(commands.Channel.Flow, active=True),
        ]
    ),
)


@st.composite
def publishes(draw: st.DrawFn) -> bytes:
    """A whole publish (method, header, body) to a random exchange and key, sometimes mandatory."""
    channel = draw(st.sampled_from([1, 1, 2]))
    body = draw(st.binary(max_size=30))
    publish = make_method(
        commands.Basic.Publish, exchange=draw(_EXCHANGES), routing_key=draw(_KEYS), mandatory=draw(_FLAG)
    )
    header = struct.pack("!HHQH", 60, 0, len(body), 0)
    frames = encode_method(channel, publish)
    frames += struct.pack("!BHI", 2, channel, len(header)) + header + b"\xce"
    if body:
        frames += struct.pack("!BHI", 3, channel, len(body)) + body + b"\xce"
    return frames


@st.composite
def methods(draw: st.DrawFn) -> bytes:
    return encode_method(draw(st.sampled_from([1, 1, 1, 2])), draw(_METHODS))


# Method ids a client may send, including ones it must not (deliver, get-ok) and unknown ones.
_METHOD_IDS = st.sampled_from(
    [
        (10, 50),
        (20, 10),
        (20, 20),
        (20, 40),
        (40, 10),
        (40, 20),
        (40, 30),
        (40, 40),
        (50, 10),
        (50, 20),
        (50, 30),
        (50, 40),
        (50, 50),
        (60, 10),
        (60, 20),
        (60, 30),
        (60, 40),
        (60, 60),
        (60, 70),
        (60, 80),
        (60, 90),
        (60, 100),
        (60, 110),
        (60, 120),
        (85, 10),
        (90, 10),
        (90, 20),
        (90, 30),
        (99, 99),
    ]
)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from([1, 1, 1, 2, 3, 8]))
    channel = draw(st.sampled_from([0, 1, 1, 1, 2]))
    if kind == 1:
        class_id, method_id = draw(_METHOD_IDS)
        payload = struct.pack("!HH", class_id, method_id) + draw(st.binary(max_size=40))
    elif kind == 2:
        payload = struct.pack("!HHQ", 60, 0, draw(st.integers(0, 64))) + draw(st.binary(max_size=20))
    elif kind == 3:
        payload = draw(st.binary(max_size=64))
    else:
        payload = b""
    return struct.pack("!BHI", kind, channel, len(payload)) + payload + b"\xce"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(methods(), methods(), publishes(), frames()), min_size=1, max_size=20))
def test_random_frames_never_crash_the_session(batch: list[bytes]) -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    client.received()
    for data in batch:
        client.feed(data)  # must not raise
    sent = client.received()
    closes = [
        value for _, value in sent if isinstance(value, commands.Connection.Close | commands.Channel.Close)
    ]
    if closes:
        assert close_of(sent)[1] != 541, f"internal error for {batch!r}: {closes}"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_after_the_handshake_are_typed_errors(data: bytes) -> None:
    client = Client()
    client.handshake()
    client.feed(data)
    for _, value in client.received():
        if isinstance(value, commands.Connection.Close):
            assert value.reply_code != 541
