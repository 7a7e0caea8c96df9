"""A long randomised run of the HA schedules (tests/ha/mix.py): the pair on a replicated PostgreSQL, each
server behind a slow-link proxy, faults drawn from a seed one after another (the active node or the standby
cut from the primary, the clients cut from the active node, the primary killed and its standby promoted, a
slow and lossy link) for ``--minutes``; then the checker (tests/ha/checker.py): nothing confirmed lost,
every repeat flagged ``redelivered``, never two nodes serving. Prints, per kind of fault, how many ran and
their failover and recovery times, and the totals. Needs root (network namespaces), iproute2, nftables and
PostgreSQL, as tests/ha does.

    sudo PYTHONPATH=. .venv/bin/python benchmarks/ha_random_mix.py --minutes 10 --seed 1
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.ha import netns
from tests.ha.mix import mixed, report
from tests.postgres.cluster import unavailable as postgres_unavailable


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--logs", type=Path, default=None, help="keep the history and node logs here")
    args = parser.parse_args(argv)
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    logs = args.logs or Path(tempfile.mkdtemp(prefix="warrenmq-ha-mix-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"seed {args.seed}, {args.minutes:g} min, logs in {logs}", flush=True)
    started = time.monotonic()
    with mixed(logs) as mix:
        mix.run(random.Random(args.seed), args.minutes * 60)
        result = mix.finish()
    print(report(mix, result, args.seed))
    print(f"ran {(time.monotonic() - started) / 60:.1f} min")
    problems = result.problems()
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
