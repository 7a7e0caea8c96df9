"""The store alarm (PostgreSQL out of reach): the writer's outage reports become a resource alarm whose
connection.blocked reason names the store, raised and cleared once each, alongside the memory and disk
alarms."""

from __future__ import annotations

from broker.config.model import Watermark
from broker.core.model.clock import ManualClock
from broker.server.alarms import AlarmSources, ResourceAlarms


def _alarms(changes: list[tuple[str, ...]], rss_bytes: int = 0) -> ResourceAlarms:
    sources = AlarmSources(rss_bytes=lambda: rss_bytes, disk_free_bytes=lambda _path: 1 << 40)
    return ResourceAlarms(
        ManualClock(),
        Watermark("absolute", 1000),
        Watermark("absolute", 0),
        None,
        changes.append,
        sources,
    )


def test_the_store_alarm_blocks_with_its_own_reason_and_clears() -> None:
    changes: list[tuple[str, ...]] = []
    alarms = _alarms(changes)
    alarms.store_outage(True)
    alarms.store_outage(True)  # reported again while it lasts: no second change
    during = alarms.resources
    alarms.store_outage(False)
    assert during == ("store",)
    assert changes == [("store unreachable",), ()]
    assert alarms.resources == ()


def test_the_store_alarm_stays_while_another_clears() -> None:
    changes: list[tuple[str, ...]] = []
    alarms = _alarms(changes, rss_bytes=2000)
    alarms.sample_memory()  # over the 1000-byte watermark
    alarms.store_outage(True)
    alarms.sources.rss_bytes = lambda: 10
    alarms.sample_memory()
    assert changes == [("low on memory",), ("low on memory", "store unreachable"), ("store unreachable",)]
