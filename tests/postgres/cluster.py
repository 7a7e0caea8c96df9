"""A private PostgreSQL cluster for tests: ``initdb`` in a temporary directory owned by the ``postgres`` OS
user, ``pg_ctl`` start/stop on a free loopback port. Never the system service (Debian's ``postgresql``
package installs one; these tests leave it alone).

    cluster = PostgresCluster.create()   # None when PostgreSQL is not installed (see `unavailable()`)
    cluster.start(); dsn = cluster.dsn(); cluster.stop(); cluster.start(); cluster.destroy()

A store-outage test stops and restarts the same cluster: the port and the data directory stay. With
``netns`` (tests/ha/netns.py) every server command runs inside that network namespace and the server listens
on ``host``, the namespace's address, instead of loopback.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.ports import free_port

_BIN_GLOB = "/usr/lib/postgresql/*/bin"
_USER = "postgres"
_PASSWORD = "warrenmq"


def _bin_dir() -> Path | None:
    """The newest installed server's bin directory (Debian keeps one per major version), or PATH's."""
    found = sorted(glob.glob(_BIN_GLOB), key=lambda p: int(Path(p).parent.name.split(".")[0]))
    for candidate in reversed(found):
        if os.access(os.path.join(candidate, "initdb"), os.X_OK):
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable() -> str | None:
    """Why no cluster can be started here, or None when one can."""
    if _bin_dir() is None:
        return "PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam(_USER)
        except KeyError:
            return f"running as root but there is no {_USER!r} OS user to run the cluster as"
    return None


class PostgresCluster:
    """One private cluster. As root every server command runs as the ``postgres`` user (initdb refuses
    root); otherwise as the current user."""

    def __init__(
        self, bin_dir: Path, root: Path, port: int, host: str = "127.0.0.1", netns: str | None = None
    ) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.data_dir = root / "data"
        self.port = port
        self.host = host
        self.netns = netns
        self.user = _USER
        self.password = _PASSWORD
        self._as_postgres = os.geteuid() == 0

    @classmethod
    def create(
        cls, port: int | None = None, host: str = "127.0.0.1", netns: str | None = None
    ) -> PostgresCluster:
        reason = unavailable()
        if reason is not None:
            raise RuntimeError(reason)
        bin_dir = _bin_dir()
        assert bin_dir is not None
        root = Path(tempfile.mkdtemp(prefix="warrenmq-pg-"))
        cluster = cls(bin_dir, root, port or free_port(), host, netns)
        if cluster._as_postgres:
            shutil.chown(root, user=_USER, group=_USER)
            os.chmod(root, 0o700)
        pwfile = root / "pwfile"
        pwfile.write_text(_PASSWORD + "\n")
        if cluster._as_postgres:
            shutil.chown(pwfile, user=_USER)
        cluster._run(
            "initdb",
            "-D", str(cluster.data_dir),
            "-U", _USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        with open(cluster.data_dir / "postgresql.conf", "a") as conf:
            # Loopback only, no Unix socket in /var/run (the system service owns it), and fsync on: the
            # durability tests rely on commits reaching the disk as a production store would.
            conf.write(
                f"\nlisten_addresses = '{host}'\nport = {cluster.port}\n"
                f"unix_socket_directories = '{root}'\nmax_connections = 50\n"
            )
        return cluster

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", _USER, "--", *cmd]
        cmd = self._in_netns(cmd)
        return subprocess.run(cmd, check=check, capture_output=True, text=True, cwd=str(self.root))

    def _in_netns(self, cmd: list[str]) -> list[str]:
        return cmd if self.netns is None else ["ip", "netns", "exec", self.netns, *cmd]

    def start(self, timeout_s: float = 30.0) -> None:
        log = self.root / "server.log"
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-l", str(log), "-w", "-t", str(int(timeout_s)), "start"
        )
        if self.netns is not None:
            return  # unreachable from this namespace; pg_ctl -w waited until it accepted connections
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL did not listen on {self.port}: {log.read_text()[-2000:]}")

    def stop(self, mode: str = "fast") -> None:
        """``fast``: disconnect clients and shut down cleanly; ``immediate``: like a crash."""
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop", check=False)

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data_dir), "status", check=False).returncode == 0

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A fresh empty database; its DSN. Tests that need a store of their own take one each."""
        name = name or "wmq_" + uuid.uuid4().hex[:12]
        self.psql(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        env = dict(os.environ, PGPASSWORD=self.password)
        psql = [str(self.bin_dir / "psql"), "-h", self.host, "-p", str(self.port), "-U", self.user,
                "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql]  # fmt: skip
        out = subprocess.run(
            self._in_netns(psql),
            check=True, capture_output=True, text=True, env=env,
        )  # fmt: skip
        return out.stdout

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
