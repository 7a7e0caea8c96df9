"""One SparkSession for the whole test session (a JVM start costs 5-11 s): local[2], tiny shuffles, UI off.

Skipped when pyspark (the `analytics` extra) or Java is missing, so a checkout without them stays green.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    from broker.analytics.session import build_spark

    session = build_spark("local[2]", app_name="warrenmq-tests", shuffle_partitions=2, driver_memory="1g")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
