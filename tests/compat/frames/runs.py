"""Runs of a scenario through the recording proxy, cached per broker and scenario: the observation test and
the frame test of the same scenario share one run on each broker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..scenarios import kit
from .compare import Transcript, per_channel
from .normalise import ORACLE_310
from .proxy import RecordingProxy

_RUNS: dict[tuple[str, str, str, str], tuple[Any, Transcript]] = {}


def recorded(
    url: str,
    name: str,
    run: Callable[[str, str], Any],
    table: str = "scenarios",
    oracle: str = ORACLE_310,
) -> tuple[Any, Transcript]:
    """``run(proxy_url, prefix)``'s observation and the frames it caused, per channel, normalised for the
    comparison with ``oracle`` (cached)."""
    key = (table, url, name, oracle)
    if key not in _RUNS:
        prefix = kit.new_prefix()
        with RecordingProxy(url) as proxy:
            kit.PHASE_LISTENERS.append(proxy.set_phase)
            try:
                observation = run(proxy.url, prefix)
            finally:
                kit.PHASE_LISTENERS.remove(proxy.set_phase)
            proxy.settle(2.0)
            _RUNS[key] = (observation, per_channel(proxy.recordings, prefix, oracle))
    return _RUNS[key]


def scenario_run(url: str, name: str, oracle: str = ORACLE_310) -> tuple[Any, Transcript]:
    """A ``SCENARIOS`` entry through the proxy: what pika observed, and the frames."""
    return recorded(
        url, name, lambda proxy_url, prefix: kit.run_scenario(proxy_url, name, prefix), oracle=oracle
    )
