"""Direct reply-to names as RabbitMQ 3.13 writes and reads them (rabbit_direct_reply_to, pid_recomposition).

A name is ``amq.rabbitmq.reply-to.`` + base64 of the reply channel's pid in Erlang's external term format
(NEW_PID_EXT, its node replaced by ``reply@`` + ``erlang:phash2(node())``: "v2", as 3.10.8 sends them too)
+ ``.`` + base64 of a 16-byte random key. Reading one back, RabbitMQ tries v2 first and then the v1 encoding
(``<pid term>.<key>``), whose ``binary_to_term`` crashes the channel on anything that is not a local pid.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Final, NamedTuple

from broker.core.exchanges.erlang_hash import Atom, phash2

PREFIX: Final = "amq.rabbitmq.reply-to."  # Final: the compiled channel inlines it (per publish)
_TTB = 131
_NEW_PID_EXT, _PID_EXT = 88, 103
_ATOM_UTF8_EXT, _SMALL_ATOM_UTF8_EXT = 118, 119
_ATOM_EXT, _SMALL_ATOM_EXT = 100, 115
_NEW_PID_TAIL = struct.Struct("!III")  # ID, Serial, Creation
_OLD_PID_TAIL = struct.Struct("!IIB")  # Erlang 22's PID_EXT: an 8-bit creation
_INTEGER = re.compile(r"[+-]?[0-9]+")  # what list_to_integer/1 accepts


class Pid(NamedTuple):
    node: str
    id: int
    serial: int
    creation: int


def reply_node(node_name: str) -> str:
    """The node a v2 name carries: ``reply@`` + phash2 of the node's atom (compute_key_and_suffix_v2)."""
    return f"reply@{phash2(Atom(node_name))}"


def encode(node_name: str, pid_id: int, creation: int, key: bytes) -> str:
    """The name a reply consumer's channel gets (pid_recomposition:to_binary: NEW_PID_EXT, ATOM_UTF8_EXT)."""
    node = reply_node(node_name).encode()
    pid = bytes((_TTB, _NEW_PID_EXT, _ATOM_UTF8_EXT)) + struct.pack("!H", len(node)) + node
    pid += _NEW_PID_TAIL.pack(pid_id, 0, creation)
    return PREFIX + base64.b64encode(pid).decode() + "." + base64.b64encode(key).decode()


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _pid(data: bytes, atoms: tuple[int, ...]) -> Pid | None:
    """The pid a term's bytes hold exactly, with its node in one of ``atoms``' encodings, else None."""
    if len(data) < 4 or data[0] != _TTB or data[1] not in (_NEW_PID_EXT, _PID_EXT):
        return None
    kind = data[2]
    if kind in (_ATOM_UTF8_EXT, _ATOM_EXT) and kind in atoms:
        size, start = int.from_bytes(data[3:5], "big"), 5
    elif kind in (_SMALL_ATOM_UTF8_EXT, _SMALL_ATOM_EXT) and kind in atoms:
        size, start = data[3], 4
    else:
        return None
    tail = data[start + size :]
    codec = _NEW_PID_TAIL if data[1] == _NEW_PID_EXT else _OLD_PID_TAIL
    if len(tail) != codec.size:
        return None
    try:
        node = data[start : start + size].decode()
    except UnicodeDecodeError:
        return None
    pid_id, serial, creation = codec.unpack(tail)
    return Pid(node, pid_id, serial, creation)


def decode_v2(suffix: str, node_name: str) -> Pid | None:
    """decode_reply_to_v2: the pid of a name's suffix when it is a v2 name of this node, else None. Only the
    integer after the node's "@" is compared with this node's hash (rabbit_nodes_common:parts)."""
    pid_part, dot, _key = suffix.partition(".")
    raw = _b64(pid_part) if dot else None
    pid = _pid(raw, (_ATOM_UTF8_EXT, _SMALL_ATOM_UTF8_EXT)) if raw is not None else None
    if pid is None:
        return None
    _name, at, node_hash = pid.node.partition("@")
    if not at or _INTEGER.fullmatch(node_hash) is None or int(node_hash) != phash2(Atom(node_name)):
        return None
    return pid


def v1_crashes(suffix: str, node_name: str) -> bool:
    """Whether decode_reply_to_v1 crashes RabbitMQ's channel (541) on a suffix that is not a v2 name of this
    node: two dot-separated parts (string:lexemes) whose first is not base64 of a pid on this node. Any other
    number of parts is simply unknown (checked against RabbitMQ 3.10.8, the same code as 3.13)."""
    parts = [part for part in suffix.split(".") if part]
    if len(parts) != 2:
        return False
    raw = _b64(parts[0])
    pid = _pid(raw, (_ATOM_UTF8_EXT, _SMALL_ATOM_UTF8_EXT, _ATOM_EXT, _SMALL_ATOM_EXT)) if raw else None
    return pid is None or pid.node != node_name
