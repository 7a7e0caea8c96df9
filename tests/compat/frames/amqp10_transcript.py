"""AMQP 1.0 transcripts: what a broker sent on each connection, per channel (session), as comparable lines.

RabbitMQ 4 runs a connection's reader and each session as processes of their own, so frames of two sessions
may interleave in any order; within a session (a channel) the order is the session's, which a client sees and
relies on. What the client sent is recorded but not compared: python-qpid-proton writes when its own loop
decides. Heartbeats (empty frames) are timing and left out.

The normalisation is in one place, ``normalise``: what must differ between two brokers (their container-id,
their self-description, generated names) becomes a placeholder, everything else is compared as sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .amqp10_wire import decode_frame
from .compare import Transcript
from .proxy import Recording

# open's properties that describe the broker itself (RabbitMQ 4.0.5: product, version, platform, copyright,
# information, cluster_name, node): present on both, their values differ by construction.
SELF_DESCRIPTION = {"product", "version", "platform", "copyright", "information", "cluster_name", "node"}


class Renamer:
    """Generated names numbered in order of appearance along one transcript (both brokers' transcripts
    number them alike): the scenario's prefix, and names the client library generated."""

    def __init__(self, prefix: str, patterns: tuple[str, ...]) -> None:
        self.prefix = prefix
        self.patterns = [re.compile(pattern) for pattern in patterns]
        self.seen: dict[str, str] = {}

    def text(self, value: str) -> str:
        value = value.replace(self.prefix, "P")
        for pattern in self.patterns:
            value = pattern.sub(self._number, value)
        return value

    def _number(self, match: re.Match[str]) -> str:
        name = match.group(0)
        if name not in self.seen:
            self.seen[name] = f"<name#{len(self.seen)}>"
        return self.seen[name]


def _walk(value: Any, names: Renamer) -> Any:
    if isinstance(value, str):
        return names.text(value)
    if isinstance(value, list):
        return [_walk(item, names) for item in value]
    if isinstance(value, dict):
        return {key: _walk(item, names) for key, item in value.items()}
    return value


def _open(fields: list[Any]) -> list[Any]:
    """open's fields (``[code, items]``) with its container-id and self-description replaced: each broker
    names its own container, and the properties map's values (so its size, so map8 or map32) differ by
    construction."""
    code, items = fields
    items = list(items)
    items[0] = [items[0][0], "<container-id>"]
    properties = items[9] if len(items) > 9 else None
    if isinstance(properties, list) and isinstance(properties[1], dict):
        entries = []
        for key, value in properties[1]["map"]:
            described = isinstance(key, list) and key[1] in SELF_DESCRIPTION
            entries.append([key, [value[0], "<self-description>"] if described else value])
        items[9] = ["<map8 or map32>", {"map": entries}]
    return [code, items]


def normalise(record: dict[str, Any], names: Renamer) -> dict[str, Any]:
    """The one place where a broker's frame is made comparable with the other's."""
    if record.get("performative") == "open":
        record = {**record, "fields": _open(record["fields"])}
    normalised: dict[str, Any] = _walk(record, names)
    return normalised


def per_channel(recordings: list[Recording], prefix: str, patterns: tuple[str, ...] = ()) -> Transcript:
    """Per connection, per channel, the frames the broker sent, in order."""
    names = Renamer(prefix, patterns)
    lines: list[str] = []
    for number, recording in enumerate(recordings):
        by_channel: dict[int, list[str]] = {}
        for event in recording.events:
            if event.direction != "S":
                continue
            record = decode_frame(event.frame)
            if record["kind"] == "heartbeat":
                continue
            channel = int(record.pop("ch", -1))
            shown = json.dumps(normalise(record, names), ensure_ascii=False, separators=(",", ":"))
            by_channel.setdefault(channel, []).append(f"c{number} ch{channel} {shown}")
        for channel in sorted(by_channel):
            lines.extend(by_channel[channel])
    return Transcript(lines)
