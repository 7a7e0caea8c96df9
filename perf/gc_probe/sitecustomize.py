"""Imported at start-up by a broker that perf/ab.py runs with ``--gc`` (this directory is put on its
PYTHONPATH): counts the cyclic collector's runs per generation while the broker serves (after
`broker.server.runtime.tune_for_serving` froze start-up's objects) and their time, and appends one JSON line
to $GCPROBE_OUT at exit. The broker is single-threaded and the collector does not sleep, so the wall time of
a collection is CPU time of the broker."""

from __future__ import annotations

import atexit
import gc
import json
import os
import time
from typing import Any

_OUT = os.environ.get("GCPROBE_OUT")
_COUNTS = [0, 0, 0]
_SECONDS = [0.0, 0.0, 0.0]
_STARTED = [0.0]


def _collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _STARTED[0] = time.perf_counter()
    elif gc.get_freeze_count():  # serving: start-up's collections (imports) are not the scenario's
        _COUNTS[info["generation"]] += 1
        _SECONDS[info["generation"]] += time.perf_counter() - _STARTED[0]


def _report() -> None:
    assert _OUT is not None
    with open(_OUT, "a") as out:
        out.write(json.dumps({"pid": os.getpid(), "collections": _COUNTS, "seconds": _SECONDS}) + "\n")


if _OUT:
    gc.callbacks.append(_collection)
    atexit.register(_report)
