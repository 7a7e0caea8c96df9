"""Transcripts: the recorded frames of one scenario run, cut into the views that are deterministic, as lines.

Two brokers answer the same client with the same frames, but not always with the same timing, so the raw
order of everything on a connection is not comparable as it stands. Two views are:

- ``per_channel`` (the pika scenarios): per connection, per channel, the frames the broker sent in order. What
  pika sent is in the recording but not compared: pika answers some frames lazily (a channel.close-ok goes
  out when it next processes events, which may be after the scenario ended), and what it observed is compared
  by the scenario's own test. Within a channel RabbitMQ's order is its channel process's order, which
  a client can see and rely on; across channels its channel processes run concurrently, and a blocking client
  (pika) writes when its own loop decides, so where one channel's frame lands relative to another's depends on
  scheduling. Cross-channel order is therefore not compared here.
- ``per_step`` (the raw scenarios): the raw client writes one step's frames in one ``sendall`` and waits for
the
  answers it expects before the next step, so every broker frame belongs to the step that caused it. Per
  connection and step, the client's frames and then each channel's broker frames are compared in order. Where
  one client action causes frames on several channels, what is compared is that all of them arrive before the
  client's next action, and each channel's order: not their order across channels, because RabbitMQ writes
  each channel through its own writer process and that order is not defined even for one action (basic.recover
  then basic.cancel in one read: the delivery to the other channel's consumer came before or after the first
  channel's cancel-ok in 1 of 5 runs of RabbitMQ against itself).

Lines are ``c<connection> ...``; generated names are numbered along the view, so both sides number them alike.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .normalise import NOT_COMPARED_PHASES, ORACLE_310, Names, normalise_record, rename_strings
from .proxy import Event, Recording
from .wire import decode


@dataclass(frozen=True)
class Transcript:
    """One scenario's recording on one broker, as comparable lines."""

    lines: list[str]

    def diff(self, other: Transcript, ours: str = "WarrenMQ", theirs: str = "RabbitMQ") -> str:
        """A unified diff, RabbitMQ's lines first; empty when equal."""
        return "\n".join(
            difflib.unified_diff(other.lines, self.lines, fromfile=theirs, tofile=ours, lineterm="", n=4)
        )


def _line(prefix: str, record: dict[str, Any]) -> str:
    shown = {key: value for key, value in record.items() if key not in ("ch",)}
    return f"{prefix} {json.dumps(shown, ensure_ascii=False, separators=(',', ':'))}"


def _records(events: Iterable[Event], keep_heartbeats: bool, oracle: str) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for event in events:
        if event.phase in NOT_COMPARED_PHASES:
            continue  # see normalise.NOT_COMPARED_PHASES
        decoded = decode(event.frame)
        if event.phase == "poll":
            decoded["polled"] = True
        record = normalise_record(decoded, keep_heartbeats, oracle)
        if record is not None:
            out.append((event.direction, record))
    return out


def _ending(recording: Recording) -> list[str]:
    return ["broker closed the socket"] if recording.broker_closed_early else []


def per_channel(recordings: list[Recording], prefix: str, oracle: str = ORACLE_310) -> Transcript:
    names = Names(prefix)
    lines: list[str] = []
    for number, recording in enumerate(recordings):
        records = _records(recording.events, keep_heartbeats=False, oracle=oracle)
        channels = sorted({record.get("ch", 0) for _, record in records})
        for channel in channels:
            for direction, record in records:
                if direction == "S" and record.get("ch", 0) == channel:
                    lines.append(_line(f"c{number} ch{channel} S", record))
        lines.extend(f"c{number} {text}" for text in _ending(recording))
    return Transcript(rename_strings(lines, names))


def per_step(
    recordings: list[Recording], prefix: str, keep_heartbeats: bool = False, oracle: str = ORACLE_310
) -> Transcript:
    names = Names(prefix)
    lines: list[str] = []
    for number, recording in enumerate(recordings):
        steps: list[list[tuple[str, dict[str, Any]]]] = []
        previous = "S"
        for direction, record in _records(recording.events, keep_heartbeats, oracle):
            if direction == "C" and previous == "S":
                steps.append([])
            if not steps:
                steps.append([])
            previous = direction
            steps[-1].append((direction, record))
        for step, frames in enumerate(steps, start=1):
            channels = sorted({record.get("ch", 0) for _, record in frames})
            for direction in ("C", "S"):
                for channel in channels:
                    for d, record in frames:
                        if d == direction and record.get("ch", 0) == channel:
                            lines.append(_line(f"c{number} step{step} {direction} ch{channel}", record))
        lines.extend(f"c{number} {text}" for text in _ending(recording))
    return Transcript(rename_strings(lines, names))
