"""Spill files: where a paged queue's message bodies wait (broker.core.queues.queue_paging's `Spill`).

One spill per paged queue, as a run of append-only segment files under ``<data dir>/spill/``. A body is
written once and read once (then released); a segment no longer written whose bodies have all been read is
deleted, so the disk a spill holds follows the backlog, not the traffic. Writes and reads are plain
``os.write`` / ``os.pread`` from the event loop's thread: they meet the page cache, and only a queue under
memory pressure makes them. Nothing here survives a restart (the store holds the durable messages): the
directory is emptied when the broker starts.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

from broker.storage.io_counters import IOCounters

# A segment is closed for writing past this size; a token is (segment number << OFFSET_BITS) | offset.
SEGMENT_BYTES = 64 << 20
OFFSET_BITS = 40
_OFFSET_MASK = (1 << OFFSET_BITS) - 1


class SpillError(OSError):
    pass


class SpillDirectory:
    """The ``spill`` directory of a data directory, and a new `SpillFile` for each queue that pages."""

    def __init__(self, data_dir: str) -> None:
        self.path = Path(data_dir) / "spill"
        _clear(self.path)  # left by a previous run: nothing in it is needed
        self.path.mkdir(parents=True, exist_ok=True)
        self._numbers = itertools.count(1)
        self.io = IOCounters()  # every spill's writes and reads, for /api/nodes' io_* figures

    def new_spill(self) -> SpillFile:
        return SpillFile(self.path / f"q{next(self._numbers)}", self.io)


def _clear(directory: Path) -> None:
    """Empties ``directory`` of a previous run's spill files (flat files): what shutil.rmtree would do for
    them, without importing shutil, and its zlib, bz2 and lzma, into every start."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                import shutil  # not ours: whatever put it there

                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


class SpillFile:
    """Segments ``<base>.<n>``; ``live[n]`` counts the bodies of segment n not read back yet."""

    def __init__(self, base: Path, io: IOCounters | None = None) -> None:
        self.base = base
        self.io = io if io is not None else IOCounters()
        self.live: dict[int, int] = {}
        self._fds: dict[int, int] = {}
        self._segment = 0
        self._offset = 0
        self.bytes_written = 0  # for tests and figures: everything this spill has written

    def _path(self, segment: int) -> str:
        return f"{self.base}.{segment}"

    def write(self, body: bytes) -> int:
        if self._segment == 0 or self._offset >= SEGMENT_BYTES:
            self._start_segment()
        segment, offset = self._segment, self._offset
        fd = self._fds[segment]
        started = time.perf_counter()
        written = os.write(fd, body)
        while written < len(body):  # a regular file takes it all, but a short write must not lose bytes
            written += os.write(fd, body[written:])
        io = self.io
        io.write_s += time.perf_counter() - started
        io.write_count += 1
        io.write_bytes += written
        self._offset += len(body)
        self.bytes_written += len(body)
        self.live[segment] += 1
        return (segment << OFFSET_BITS) | offset

    def _start_segment(self) -> None:
        previous = self._segment
        self._segment += 1
        self._offset = 0
        fd = os.open(self._path(self._segment), os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self._fds[self._segment] = fd
        self.live[self._segment] = 0
        if previous and not self.live.get(previous):
            self._drop(previous)

    def read(self, token: int, size: int) -> bytes:
        segment, offset = token >> OFFSET_BITS, token & _OFFSET_MASK
        fd = self._fds.get(segment)
        if fd is None:
            raise SpillError(f"spill segment {self._path(segment)} is gone")
        started = time.perf_counter()
        body = os.pread(fd, size, offset)
        io = self.io
        io.read_s += time.perf_counter() - started
        io.read_count += 1
        io.read_bytes += len(body)
        if len(body) != size:
            raise SpillError(f"spill segment {self._path(segment)}: short read at {offset}")
        self.live[segment] -= 1
        if not self.live[segment] and segment != self._segment:
            self._drop(segment)
        return body

    def _drop(self, segment: int) -> None:
        fd = self._fds.pop(segment, None)
        self.live.pop(segment, None)
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(self._path(segment))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        for segment in list(self._fds):
            self._drop(segment)
        self._segment = 0
        self._offset = 0
