"""When to page: above ``vm_memory_high_watermark_paging_ratio`` of the memory watermark, queues holding
more than their head's worth of bodies in memory move the rest to spill files
(broker.core.queues.queue_paging).

As RabbitMQ 3.x's memory monitor tells its classic queues to reduce their RAM use past the paging ratio
(default 0.5 of the watermark; a ratio above 1 turns paging off), so a backlog can outgrow RAM without the
memory alarm stopping publishers for good. Called after each memory sample (every 50 ms); only a broker with
a data directory pages (the spill lives there, watched by the disk alarm).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from broker.core.broker import Broker
from broker.core.queues.queue_paging import page_out
from broker.storage.spill import SpillDirectory

log = structlog.get_logger("warrenmq.paging")

DEFAULT_PAGING_RATIO = 0.5
# Freed bodies go back to the OS (glibc malloc_trim) at most this often while paging, so RSS shows it.
TRIM_INTERVAL_S = 0.5


class MemoryPager:
    def __init__(
        self,
        broker: Broker,
        data_dir: str,
        ratio: float,
        now_s: Callable[[], float],
        trim: Callable[[], None],
        disk_low: Callable[[], bool] = lambda: False,
    ) -> None:
        self.broker = broker
        self.spills = SpillDirectory(data_dir)
        self.ratio = ratio
        self.now_s = now_s
        self.trim = trim
        self.disk_low = disk_low  # the disk alarm: no new paging onto a disk that is full
        self._trimmed_at_s = 0.0
        self.queues_paged = 0  # how many times a queue started paging
        self.messages_paged = 0  # bodies paged out when queues started paging (not those paged on arrival)

    def sampled(self, used: int, limit: int) -> None:
        """A memory sample: page the queues with a backlog in memory when ``used`` is past the ratio."""
        if self.ratio > 1 or used <= self.ratio * limit or self.disk_low():
            return
        paged = 0
        for vhost in list(self.broker.vhosts.values()):
            for queue in list(vhost.queues.values()):
                count = page_out(queue, self.spills.new_spill)
                if count:
                    self.queues_paged += 1
                    paged += count
                    log.info("queue_paging", vhost=vhost.name, queue=queue.name, paged=count, mem_used=used)
        self.messages_paged += paged
        now = self.now_s()
        if paged and now - self._trimmed_at_s >= TRIM_INTERVAL_S:
            self._trimmed_at_s = now
            self.trim()
