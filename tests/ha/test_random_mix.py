"""A random mix of every HA schedule on one pair for a minute (tests/ha/mix.py): the active node or the
standby cut from the primary database, the clients cut from the active node, the primary killed and its
standby promoted, a slow and lossy link, drawn from a seed; after draining, the checker finds nothing
confirmed lost, every repeat flagged, never two nodes serving, and every cut of the active node from the
database failed over within the lease plus 5 s.

The seed is printed; ``WARRENMQ_MIX_SEED=N`` runs that mix again, ``WARRENMQ_MIX_S`` sets its length
(benchmarks/ha_random_mix.py runs a long one)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.ha import netns
from tests.ha.mix import mixed, report
from tests.postgres.cluster import unavailable as postgres_unavailable

MIX_S = float(os.environ.get("WARRENMQ_MIX_S", "60"))
SEED = int(os.environ.get("WARRENMQ_MIX_SEED", "41"))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_random_mix_of_faults(tmp_path: Path) -> None:
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    print(f"\nrandom mix: WARRENMQ_MIX_SEED={SEED} WARRENMQ_MIX_S={MIX_S:g}")
    with mixed(tmp_path) as mix:
        mix.run(random.Random(SEED), MIX_S)
        result = mix.finish()
        print(report(mix, result, SEED))
    assert result.problems() == []
