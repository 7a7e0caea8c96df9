"""The raw frame scenarios' table and runner: each scenario drives ``RawClient``s through the recording proxy;
its transcript is compared step by step (``compare.per_step``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..scenarios import kit
from .compare import Transcript, per_step
from .normalise import ORACLE_310
from .proxy import Recording, RecordingProxy
from .raw import RawClient

RawScenario = Callable[[Callable[[], RawClient], str], None]


@dataclass(frozen=True)
class Entry:
    run: RawScenario
    plugins: bool  # needs the oracle with ORACLE_PLUGINS (x-consistent-hash)


RAW_SCENARIOS: dict[str, Entry] = {}


def raw_scenario(scenario: RawScenario) -> RawScenario:
    RAW_SCENARIOS[scenario.__name__] = Entry(scenario, plugins=False)
    return scenario


def plugin_raw_scenario(scenario: RawScenario) -> RawScenario:
    """A raw scenario that needs the plugins oracle (``rabbitmq_plugins_url``)."""
    RAW_SCENARIOS[scenario.__name__] = Entry(scenario, plugins=True)
    return scenario


def record_raw(url: str, name: str) -> tuple[list[Recording], str]:
    """Run raw scenario ``name`` against ``url`` through the proxy; its recordings and the prefix it used."""
    prefix = kit.new_prefix()
    clients: list[RawClient] = []
    with RecordingProxy(url) as proxy:

        def open_client() -> RawClient:
            client = RawClient(proxy.url)
            clients.append(client)
            return client

        try:
            RAW_SCENARIOS[name].run(open_client, prefix)
        finally:
            for client in clients:
                client.sock.close()
        proxy.settle(2.0)
        return list(proxy.recordings), prefix


def raw_transcript(url: str, name: str, oracle: str = ORACLE_310) -> Transcript:
    """Raw scenario ``name``'s frames on ``url``, normalised for the comparison with ``oracle``."""
    return per_step(*record_raw(url, name), oracle=oracle)
