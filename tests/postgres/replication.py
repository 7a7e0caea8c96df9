"""A replicated PostgreSQL for the HA tests: a primary and a streaming standby, each a private cluster
(tests/postgres/cluster.py) on a host of its own (a network namespace, tests/ha/netns.py), as a user runs the
store on a replicated PostgreSQL (docs/high-availability.md):

- the standby is a ``pg_basebackup`` of the primary (``-R``: it streams from it, ``-C -S``: through a
  replication slot of its own, so the primary keeps every WAL segment the standby has not received);
- the primary has ``synchronous_standby_names = '*'`` (and ``synchronous_commit`` left at ``on``), so a commit
  returns, and WarrenMQ confirms, only once the standby has flushed it: a confirmed message survives the
  primary's loss;
- ``fail_over()`` is what a failover manager (Patroni, a managed PostgreSQL) does when the primary is lost:
  the primary's processes are killed with SIGKILL (a lost machine: nothing is flushed or said goodbye), then
  the standby is promoted with ``pg_ctl promote``. The promoted server has no standby of its own (its
  configuration never named one), so its commits do not wait for one;
- ``rejoin()`` makes the lost server a standby of the new primary again (a fresh base backup, as after a lost
  machine is replaced) and makes replication synchronous again.

``dsn(database)`` lists both servers, libpq-style, with ``target_session_attrs=read-write``: the client
connects to whichever accepts writes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.postgres.cluster import PostgresCluster

SLOT = "warrenmq_standby"


class ReplicatedPostgres:
    def __init__(self, servers: list[PostgresCluster], namespaces: list[str], subnet: str) -> None:
        self.servers = servers
        self.namespaces = namespaces
        self.subnet = subnet
        self.primary = 0  # index into servers
        self.failovers = 0

    @classmethod
    def create(cls, hosts: list[tuple[str, str]], subnet: str) -> ReplicatedPostgres:
        """``hosts``: (address, namespace) of the primary, then of the standby; ``subnet``: the clients'
        addresses (``10.77.0``), let in for queries and replication."""
        (address, namespace), _ = hosts
        primary = PostgresCluster.create(host=address, netns=namespace)
        with open(primary.data_dir / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {subnet}.0/24 scram-sha-256\n")
            hba.write(f"host replication all {subnet}.0/24 scram-sha-256\n")
        with open(primary.data_dir / "postgresql.conf", "a") as conf:
            # The default wal_level (replica) and max_wal_senders (10) allow streaming; say so, and keep the
            # standby hot (readable), as a failover manager's standbys are.
            conf.write("wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\n")
        primary.start()
        standby_address, standby_namespace = hosts[1]
        standby = PostgresCluster(primary.bin_dir, _root(), primary.port, standby_address, standby_namespace)
        pair = cls([primary, standby], [namespace, standby_namespace], subnet)
        try:
            pair._base_backup(1)
            pair._make_synchronous()
        except BaseException:
            pair.destroy()
            raise
        return pair

    @property
    def standby(self) -> int:
        return 1 - self.primary

    def dsn(self, database: str) -> str:
        first = self.servers[0]
        hosts = ",".join(f"{server.host}:{server.port}" for server in self.servers)
        return (
            f"postgresql://{first.user}:{first.password}@{hosts}/{database}?target_session_attrs=read-write"
        )

    def create_database(self) -> str:
        """A fresh database on the primary (replicated to the standby); the multi-host DSN to it."""
        single = self.servers[self.primary].create_database()
        return self.dsn(single.rsplit("/", 1)[1])

    def _base_backup(self, index: int) -> None:
        """Server ``index``: a fresh standby of the primary, started and streaming."""
        primary, standby = self.servers[self.primary], self.servers[index]
        shutil.rmtree(standby.data_dir, ignore_errors=True)
        slot_exists = primary.psql(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{SLOT}'")
        if slot_exists.strip() != "0":
            primary.psql(f"SELECT pg_drop_replication_slot('{SLOT}')")
        conninfo = f"host={primary.host} port={primary.port} user={primary.user} password={primary.password}"
        # -R writes standby.signal and primary_conninfo, -C -S the slot, -X stream the WAL during the backup.
        standby._run(
            "pg_basebackup", "-d", conninfo, "-D", str(standby.data_dir),
            "-R", "-C", "-S", SLOT, "-X", "stream", "--no-sync", "-c", "fast",
        )  # fmt: skip
        with open(standby.data_dir / "postgresql.conf", "a") as conf:
            # The backup copied the primary's configuration: this server's own address and socket directory
            # come last, so they win.
            conf.write(f"\nlisten_addresses = '{standby.host}'\nunix_socket_directories = '{standby.root}'\n")
        auto = standby.data_dir / "postgresql.auto.conf"
        # A server that was primary had synchronous_standby_names set by ALTER SYSTEM; a standby has none
        # of its own, or its promotion would leave every commit waiting for a standby nobody started.
        lines = [line for line in auto.read_text().splitlines() if "synchronous_standby_names" not in line]
        auto.write_text("\n".join(lines) + "\n")
        standby.start()

    def _make_synchronous(self, timeout_s: float = 60.0) -> None:
        """The primary waits for its standby's flush on every commit, from now on (once the standby has
        caught up and reports itself synchronous)."""
        primary = self.servers[self.primary]
        primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        primary.psql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + timeout_s
        synchronous = "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"
        while primary.psql(synchronous).strip() != "1":
            assert time.monotonic() < deadline, "the standby did not become synchronous"
            time.sleep(0.1)

    def kill_primary(self) -> None:
        """SIGKILL every process of the primary's host (postmaster and backends: a lost machine)."""
        namespace = self.namespaces[self.primary]
        pids = subprocess.run(
            ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True
        ).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def promote(self) -> None:
        """Promote the standby (``pg_ctl promote -w``: returns once it accepts writes)."""
        standby = self.servers[self.standby]
        standby._run("pg_ctl", "-D", str(standby.data_dir), "-w", "-t", "60", "promote")
        self.primary = self.standby
        self.failovers += 1

    def fail_over(self) -> None:
        self.kill_primary()
        self.promote()

    def rejoin(self) -> None:
        """The lost server back as a synchronous standby of the new primary."""
        lost = self.standby
        self.servers[lost].stop("immediate")
        self._base_backup(lost)
        self._make_synchronous()

    def destroy(self) -> None:
        for server in self.servers:
            server.destroy()


def _root() -> Path:
    """A data directory's parent owned by the ``postgres`` user when running as root (initdb's rule, which
    pg_basebackup's data directory follows too)."""
    root = Path(tempfile.mkdtemp(prefix="warrenmq-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres", group="postgres")
        os.chmod(root, 0o700)
    return root
