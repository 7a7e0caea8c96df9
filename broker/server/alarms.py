"""Resource alarms: the memory high watermark and the disk free limit, sampled on a timer off the hot path.

As RabbitMQ's vm_memory_monitor and rabbit_disk_monitor: the memory alarm is in effect while the process uses
more than ``vm_memory_high_watermark`` (a fraction of the machine's RAM or of the cgroup's limit, or bytes),
the disk alarm while the data directory's file system has less than ``disk_free_limit`` free. Whoever is
told of a change (``on_change``) blocks and unblocks publishers (``broker.server.flow_control``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from broker.config.model import Watermark
from broker.core.model.clock import Clock, TimerHandle

if TYPE_CHECKING:
    import psutil

log = structlog.get_logger("warrenmq.alarms")

MEMORY = "memory"
DISK = "disk"
# Not RabbitMQ's (its store is local): a PostgreSQL store out of reach (broker.storage.writer reports it).
STORE = "store"
# connection.blocked reasons, as rabbit_reader words them ("low on memory"); the store's in the same style.
BLOCK_REASONS = {MEMORY: "low on memory", DISK: "low on disk", STORE: "store unreachable"}
# Memory is sampled often: a publisher at full speed grows the heap ~200 MB/s, so the alarm must be raised
# within a small fraction of a second to hold RSS near the watermark. One psutil read costs ~10 us.
MEMORY_INTERVAL_S = 0.05
DISK_INTERVAL_S = 1.0
# While the memory alarm is in effect, freed heap pages are handed back to the OS (glibc malloc_trim) at most
# this often before RSS is read: message bodies below mmap's threshold live in malloc arenas, which keep
# freed memory, and the alarm could not clear after a purge without it.
TRIM_INTERVAL_S = 0.5
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def total_memory_bytes() -> int:
    """The RAM the broker may use: the machine's, or its cgroup's limit when lower (as RabbitMQ 3.x reads
    the cgroup limit in containers)."""
    total = physical_memory_bytes()
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as limit_file:
                text = limit_file.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def physical_memory_bytes() -> int:
    """The machine's RAM: its physical pages (Linux: MemTotal, the figure psutil reads too), or psutil's where
    the system does not tell. psutil is imported only then: importing it costs start-up time."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not a POSIX system with the names
        import psutil

        return int(psutil.virtual_memory().total)


def memory_limit_bytes(watermark: Watermark, total_bytes: int) -> int:
    if watermark.kind == "absolute":
        return int(watermark.value)
    return int(total_bytes * watermark.value)


def disk_limit_bytes(limit: Watermark, total_memory: int) -> int:
    # disk_free_limit.relative is a multiple of the machine's RAM (rabbit_disk_monitor), e.g. 1.0 or 2.0.
    if limit.kind == "relative":
        return int(total_memory * limit.value)
    return int(limit.value)


_SELF: list[psutil.Process] = []
# /proc/self/statm, opened once and re-read with pread: a broker holding as many sockets as its descriptor
# limit allows could not open it again (EMFILE), and the memory alarm would go blind exactly when it matters.
_STATM: list[int] = []
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_rss_bytes() -> int:
    if not _STATM and not _SELF:
        try:
            _STATM.append(os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
        except OSError:  # not Linux: psutil's own way (imported only here, see physical_memory_bytes)
            import psutil

            _SELF.append(psutil.Process())
    if _STATM:
        return int(os.pread(_STATM[0], 128, 0).split()[1]) * _PAGE_SIZE
    return int(_SELF[0].memory_info().rss)


def disk_free_bytes(path: str) -> int:
    # shutil.disk_usage's own arithmetic: statvfs's blocks available to unprivileged users. shutil itself
    # would bring zlib, bz2 and lzma into every start (~2.5 ms).
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _malloc_trim() -> Callable[[], None]:
    # ctypes (and find_library's search) only once a trim is due: most brokers never reach the watermark.
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc
        trim = None

    def run() -> None:
        if trim is not None:
            trim(0)

    return run


class AlarmSources:
    """Where the monitor reads its figures; tests give their own to drive the alarm states. (A plain class,
    not a dataclass: a dataclass's methods are compiled at every start.)"""

    __slots__ = ("disk_free_bytes", "rss_bytes")

    def __init__(
        self,
        rss_bytes: Callable[[], int] = process_rss_bytes,
        disk_free_bytes: Callable[[str], int] = disk_free_bytes,
    ) -> None:
        self.rss_bytes = rss_bytes
        self.disk_free_bytes = disk_free_bytes


class ResourceAlarms:
    """Samples memory and disk on ``clock`` and calls ``on_change(reasons)`` when the set of alarms in effect
    changes (reasons: the `connection.blocked` texts, memory first)."""

    def __init__(
        self,
        clock: Clock,
        memory: Watermark,
        disk: Watermark,
        data_dir: str | None,
        on_change: Callable[[tuple[str, ...]], None],
        sources: AlarmSources | None = None,
        on_memory: Callable[[int, int], None] | None = None,
        node_name: str = "rabbit@localhost",
    ) -> None:
        self.clock = clock
        self.node_name = node_name  # the log's "alarm set on node ..."
        self.sources = sources or AlarmSources()
        total = total_memory_bytes()
        self.total_memory_bytes = total
        self.mem_limit = memory_limit_bytes(memory, total)
        self.disk_free_limit = disk_limit_bytes(disk, total)
        # Disk is watched where the store writes; an in-memory broker writes nothing, so it has no disk alarm.
        self.data_dir = data_dir if data_dir is not None and os.path.isdir(data_dir) else None
        self.on_change = on_change
        self.on_memory = on_memory  # every memory sample (used, limit): the pager (broker.server.paging)
        self.mem_used = 0
        self.disk_free = 0
        self.mem_alarm = False
        self.disk_alarm = False
        self.store_alarm = False
        self._timers: dict[str, TimerHandle] = {}
        self._trim: Callable[[], None] | None = None  # resolved by the first trim_heap
        self._trimmed_at_s = 0.0
        self._running = False

    @property
    def resources(self) -> tuple[str, ...]:
        """The alarms in effect, as RabbitMQ names the resources ("memory", "disk"), then "store"."""
        alarms = ((MEMORY, self.mem_alarm), (DISK, self.disk_alarm), (STORE, self.store_alarm))
        return tuple(name for name, on in alarms if on)

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(BLOCK_REASONS[name] for name in self.resources)

    def start(self) -> None:
        self._running = True
        log.info(
            "resource_limits",
            vm_memory_high_watermark_bytes=self.mem_limit,
            total_memory_bytes=self.total_memory_bytes,
            disk_free_limit_bytes=self.disk_free_limit,
            data_dir=self.data_dir,
        )
        self.sample_memory()
        self.sample_disk()

    def stop(self) -> None:
        self._running = False
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def trim_heap(self) -> None:
        """Hand freed heap pages back to the OS (glibc), so that RSS shows memory given up."""
        if self._trim is None:
            self._trim = _malloc_trim()
        self._trim()

    def store_outage(self, unreachable: bool) -> None:
        """The store writer could not reach its server (True) or committed again (False): as a resource
        alarm, publishers are blocked while it lasts and consumers go on."""
        if unreachable != self.store_alarm:
            self.store_alarm = unreachable
            self._log_alarm(STORE, unreachable)
            self.on_change(self.reasons)

    def sample_memory(self) -> None:
        if self.mem_alarm and self.clock.monotonic_s() - self._trimmed_at_s >= TRIM_INTERVAL_S:
            self._trimmed_at_s = self.clock.monotonic_s()
            self.trim_heap()
        try:
            self.mem_used = self.sources.rss_bytes()
        except OSError as error:  # keep the last figure and keep sampling (the timer must not die)
            log.error("memory_sample_failed", error=str(error))
        alarm = self.mem_used > self.mem_limit
        if alarm != self.mem_alarm:
            self.mem_alarm = alarm
            # vm_memory_monitor's line, then rabbit_alarm's.
            log.info(
                f"vm_memory_high_watermark {'set' if alarm else 'clear'}. Memory used:{self.mem_used} "
                f"allowed:{self.mem_limit}",
                domain="rabbitmq",
                mem_used=self.mem_used,
                mem_limit=self.mem_limit,
            )
            self._log_alarm(MEMORY, alarm)
            self.on_change(self.reasons)
        if self.on_memory is not None:
            self.on_memory(self.mem_used, self.mem_limit)
        self._schedule("memory", MEMORY_INTERVAL_S, self.sample_memory)

    def sample_disk(self) -> None:
        if self.data_dir is None:
            return
        try:
            self.disk_free = self.sources.disk_free_bytes(self.data_dir)
        except OSError as error:
            log.error("disk_free_unknown", data_dir=self.data_dir, error=str(error))
        else:
            alarm = self.disk_free < self.disk_free_limit
            if alarm != self.disk_alarm:
                self.disk_alarm = alarm
                # rabbit_disk_monitor's line, then rabbit_alarm's.
                log.info(
                    f"Free disk space is {'insufficient' if alarm else 'sufficient'}. Free bytes: "
                    f"{self.disk_free}. Limit: {self.disk_free_limit}",
                    domain="rabbitmq",
                    disk_free=self.disk_free,
                    disk_free_limit=self.disk_free_limit,
                    data_dir=self.data_dir,
                )
                self._log_alarm(DISK, alarm)
                self.on_change(self.reasons)
        self._schedule("disk", DISK_INTERVAL_S, self.sample_disk)

    def _log_alarm(self, resource: str, on: bool) -> None:
        """rabbit_alarm's warnings (RabbitMQ 3.10), the node as Erlang prints its name (quoted unless it is
        a plain atom); the store's alarm, WarrenMQ's own, in the same words."""
        node = (
            self.node_name if re.fullmatch(r"[a-z][A-Za-z0-9_@]*", self.node_name) else f"'{self.node_name}'"
        )
        if on:
            stars = "*" * 58
            log.warning(
                f"{resource} resource limit alarm set on node {node}.\n\n{stars}\n"
                f"*** Publishers will be blocked until this alarm clears ***\n{stars}\n",
                domain="rabbitmq",
                resource=resource,
            )
            return
        log.warning(
            f"{resource} resource limit alarm cleared on node {node}", domain="rabbitmq", resource=resource
        )
        log.warning(
            f"{resource} resource limit alarm cleared across the cluster",
            domain="rabbitmq",
            resource=resource,
        )

    def _schedule(self, name: str, delay_s: float, callback: Callable[[], None]) -> None:
        if self._running:
            self._timers[name] = self.clock.call_later(delay_s, callback)
