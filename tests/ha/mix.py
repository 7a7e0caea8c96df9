"""A random mix of the HA schedules on one pair, from one seed: the pair on a replicated PostgreSQL
(tests/postgres/replication.py), each server behind a slow-link proxy of its own (tests/ha/slow_link.py, fast
until a fault slows it), the clients recording everything (tests/ha/partition_client.py), and faults drawn one
after another until the time is up:

- ``active-database``: the active node cut from the primary, its clients still reaching it (a failover);
- ``clients-active``: the clients cut from the active node (no service until the heal);
- ``standby-database``: the standby node cut from the primary (nothing for the clients);
- ``primary-killed``: the primary SIGKILLed, its standby promoted after a failover manager's pause, then the
  lost server rebuilt as a standby (nothing confirmed lost: replication is synchronous);
- ``slow-link``: the primary's link to the nodes 200 ms per chunk each way, 5 % stalls (the lease holds).

Each fault lasts 3-10 s (from the seed), with 1-3 s of load before it. Used by tests/ha/test_random_mix.py (a
minute in ``make test``) and benchmarks/ha_random_mix.py (a long run)."""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.ha import netns
from tests.ha.checker import Verdict
from tests.ha.nodes import ROOT
from tests.ha.schedule import LEASE_S, NODES, Pair, drain, figures, make_nodes, start, summary, verdict, wait
from tests.postgres.replication import ReplicatedPostgres

KINDS = ("active-database", "clients-active", "standby-database", "primary-killed", "slow-link")
PROXY_PORT = 6543  # in each database's own namespace
DATABASES = ("pg1", "pg2")


@dataclass
class Mix:
    pair: Pair
    postgres: ReplicatedPostgres
    proxies: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    # kind -> failover times (fault to the first confirm of a message sent after it), recovery times (heal
    # to the first confirm of a message sent after it).
    failovers_s: dict[str, list[float]] = field(default_factory=dict)
    recoveries_s: dict[str, list[float]] = field(default_factory=dict)
    faults: list[tuple[str, float, float]] = field(default_factory=list)  # (kind, start, duration)

    def start_proxy(self, host: str) -> None:
        server = self.postgres.servers[DATABASES.index(host)]
        address = self.pair.lab.addresses[host]
        args = [sys.executable, "-m", "tests.ha.slow_link", f"{address}:{PROXY_PORT}"]
        args += [f"{address}:{server.port}", "--start-fast", "--seed", str(len(self.faults))]
        lost = self.proxies.pop(host, None)
        if lost is not None:
            lost.wait(30)  # killed with its server's host
        proxy = subprocess.Popen(
            self.pair.lab.exec_args(host, args), cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert proxy.stdout is not None
        assert proxy.stdout.readline().strip() == "listening"
        self.proxies[host] = proxy

    @property
    def primary_host(self) -> str:
        return DATABASES[self.postgres.primary]

    def run(self, rng: random.Random, duration_s: float) -> None:
        """Faults from ``rng`` until ``duration_s`` has passed (the last one is finished, not cut short)."""
        ends_at = time.monotonic() + duration_s
        while time.monotonic() < ends_at:
            time.sleep(rng.uniform(1.0, 3.0))  # load before the fault
            kind = rng.choice(KINDS)
            self.fault(kind, rng.uniform(3.0, 10.0), rng)

    def fault(self, kind: str, length_s: float, rng: random.Random) -> None:
        active = self.pair.active()
        assert active is not None, "no single active node before the fault"
        standby = self.pair.standby_of(active)
        if kind == "primary-killed":
            self.postgres.kill_primary()
            started = time.time()  # after the fault took hold: what was confirmed before it does not count
            self.faults.append((kind, started, length_s))
            time.sleep(rng.uniform(0.5, 2 * LEASE_S))  # a failover manager's detection
            self.postgres.promote()
            healed = time.time()
        else:
            undo = self._begin(kind, active, standby)
            started = time.time()
            self.faults.append((kind, started, length_s))
            time.sleep(length_s)  # the fault's length: the schedule itself
            undo()
            healed = time.time()
        wait(self.pair.served_after(healed), 90, f"a confirm after {kind} ended")
        history = self.pair.history()
        if kind in ("active-database", "primary-killed"):
            first = history.first_confirm_sent_after(started)
            assert first is not None
            self.failovers_s.setdefault(kind, []).append(first - started)
            if kind == "active-database":
                assert first - started <= LEASE_S + 5, f"failover took {first - started:.2f} s"
        recovered = history.first_confirm_sent_after(healed)
        assert recovered is not None
        self.recoveries_s.setdefault(kind, []).append(recovered - healed)
        if kind == "primary-killed":
            lost = DATABASES[self.postgres.standby]
            self.postgres.rejoin()
            self.start_proxy(lost)
        if kind == "slow-link":
            assert self.pair.active() == active, "the active node lost its lease on a slow but live link"
        wait(self.pair.settled, 90, "one node active and both running")

    def _begin(self, kind: str, active: str, standby: str) -> Callable[[], None]:
        lab, primary = self.pair.lab, self.primary_host
        if kind == "slow-link":
            proxy = self.proxies[primary]
            proxy.send_signal(signal.SIGUSR1)
            return lambda: proxy.send_signal(signal.SIGUSR2)
        a, b = {
            "active-database": (active, primary),
            "clients-active": ("clients", active),
            "standby-database": (standby, primary),
        }[kind]
        lab.cut(a, b)
        return lambda: lab.heal(a, b)

    def finish(self) -> Verdict:
        drain(self.pair)
        return verdict(self.pair)


@contextlib.contextmanager
def mixed(log_dir: Path) -> Iterator[Mix]:
    """The pair on the replicated store behind its proxies, started and loaded; torn down after."""
    lab = netns.Lab()
    postgres: ReplicatedPostgres | None = None
    mix: Mix | None = None
    try:
        hosts = [(lab.add(name), lab.namespace(name)) for name in DATABASES]
        for name in (*NODES, "clients"):
            lab.add(name)
        postgres = ReplicatedPostgres.create(hosts, netns.SUBNET)
        direct = postgres.create_database()
        # Both servers, each through its proxy: the DSN's hosts at PROXY_PORT.
        for server in postgres.servers:
            direct = direct.replace(f"{server.host}:{server.port}", f"{server.host}:{PROXY_PORT}")
        pair = Pair(lab, make_nodes(lab, direct, log_dir), log_dir / "history.jsonl")
        mix = Mix(pair, postgres)
        for host in DATABASES:
            mix.start_proxy(host)
        start(pair)
        yield mix
    finally:
        if mix is not None:
            mix.pair.close()
            for proxy in mix.proxies.values():
                proxy.kill()
                proxy.wait(30)
        if postgres is not None:
            postgres.destroy()
        lab.close()


def report(mix: Mix, result: Verdict, seed: int) -> str:
    """Per fault kind: how many, failover and recovery times; then the checker's totals."""
    lines = [f"random mix, seed {seed}: {len(mix.faults)} faults"]
    for kind in KINDS:
        count = sum(1 for fault in mix.faults if fault[0] == kind)
        if count:
            lines.append(
                f"  {kind}: {count}; failover {figures(mix.failovers_s.get(kind, []))}; "
                f"recovery {figures(mix.recoveries_s.get(kind, []))}"
            )
    return "\n".join(lines) + summary("random mix", result, [], [])
