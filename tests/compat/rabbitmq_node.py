"""A private, throw-away RabbitMQ node (Debian's ``rabbitmq-server`` package) for the differential suite.

The node gets its own name, AMQP port, Erlang distribution port, data/log dirs, HOME (Erlang cookie), config
file and an empty plugin list, so it never touches a system instance. It runs in its own process group, which
``stop`` terminates.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pika
import pika.exceptions

from tests.ports import free_port

RABBITMQ_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
# The oracles' Erlang VMs (the nodes and every CLI call's escript VM) with their schedulers' busy waiting off,
# as RabbitMQ's runtime tuning guide advises for shared or overcommitted hosts: an idle scheduler spins before
# it sleeps, and on two cores shared with the rest of the suite that spinning takes the slices the VM's own
# work needs. tests/compat/test_rabbitmqctl_cli.py's users step next to three CPU-bound processes: 295 s with
# the default, 61 s without busy waiting (18.5 s on a quiet machine). Scheduling only: nothing the VM answers
# changes.
ERL_SCHEDULER_ARGS = ("+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none")


def rabbitmq_available() -> bool:
    return RABBITMQ_SERVER.exists()


def _raise_nofile_limit() -> None:
    """Raise this process's soft open-files limit to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def _port_taken(output: str) -> bool:
    """The node exited because one of its ports was taken meanwhile (the AMQP or the distribution port)."""
    return "eaddrinuse" in output or "dist_port_already_used" in output


@dataclass
class RabbitMQNode:
    base_dir: Path
    port: int = field(default_factory=free_port)
    dist_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    # Plugins to enable (e.g. "rabbitmq_consistent_hash_exchange"); none by default.
    plugins: tuple[str, ...] = ()
    # Extra emulator flags, e.g. ("-rabbit", "default_worker_pool_size", "1") to set an application env.
    erl_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    @property
    def node_name(self) -> str:
        return f"warrenmq-compat-{self.port}@localhost"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "log" / "node.log"

    def _environment(self) -> dict[str, str]:
        d = self.base_dir
        return {
            **os.environ,
            "HOME": str(d / "home"),
            "RABBITMQ_NODENAME": self.node_name,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
            "RABBITMQ_LOG_BASE": str(d / "log"),
            "RABBITMQ_LOGS": str(self.log_file),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq"),
            "RABBITMQ_PID_FILE": str(d / "pid"),
            "RABBITMQ_ENABLED_PLUGINS": ",".join(self.plugins),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": " ".join(
                ("-kernel", "inet_dist_use_interface", "{127,0,0,1}", *ERL_SCHEDULER_ARGS, *self.erl_args)
            ),
            "RABBITMQ_CTL_ERL_ARGS": " ".join(ERL_SCHEDULER_ARGS),
        }

    def ctl(self, *args: str, timeout_s: float = 60.0) -> str:
        """Run ``rabbitmqctl`` against this node; its stdout (raises when it fails)."""
        done = subprocess.run(
            [str(RABBITMQ_SERVER.parent / "rabbitmqctl"), "-n", self.node_name, *args],
            env=self._environment(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def start(self, timeout_s: float = 90.0, attempts: int = 3) -> None:
        """Start the node. Its ports were free when picked, but the node binds them seconds later (Erlang
        boot), and parallel test workers start brokers on ephemeral ports meanwhile: when a port was taken
        (eaddrinuse, or the distribution port's dist_port_already_used: the node exits), pick new ones and
        start again."""
        for attempt in range(attempts):
            try:
                self._launch(timeout_s)
                return
            except RuntimeError:
                if attempt + 1 == attempts or not _port_taken(self._output()):
                    raise
                self.stop()
                self._pick_ports()

    def _pick_ports(self) -> None:
        """New ports after a collision (a subclass with more listeners picks those too)."""
        self.port, self.dist_port = free_port(), free_port()

    def _output(self) -> str:
        """The node's stdout and its log (where a plugin's listener, management's, reports eaddrinuse)."""
        paths = (self.base_dir / "log" / "stdout", self.log_file)
        return "".join(path.read_text(errors="replace") for path in paths if path.exists())

    def _launch(self, timeout_s: float) -> None:
        d = self.base_dir
        for sub in ("mnesia", "log", "home"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / "enabled_plugins").write_text(f"[{','.join(self.plugins)}].\n")
        (d / "rabbitmq.conf").write_text(f"listeners.tcp.default = 127.0.0.1:{self.port}\n")
        _raise_nofile_limit()  # inherited by the node, like the `ulimit -n` of the shell launcher
        stdout = (d / "log" / "stdout").open("wb")
        self.process = subprocess.Popen(
            [str(RABBITMQ_SERVER)],
            env=self._environment(),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stdout.close()
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        params = pika.ConnectionParameters(
            host="127.0.0.1",
            port=self.port,
            connection_attempts=1,
            socket_timeout=2,
            blocked_connection_timeout=5,
        )
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"rabbitmq-server exited with {self.process.returncode}; see {self.base_dir}/log"
                )
            try:
                connection = pika.BlockingConnection(params)
            except pika.exceptions.AMQPError:
                time.sleep(0.1)
                continue
            connection.close()
            return
        self.stop()
        raise RuntimeError(
            f"rabbitmq-server did not accept AMQP connections in {timeout_s}s; see {self.base_dir}/log"
        )

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process is None:
            return
        pgid = self.process.pid  # start_new_session: the child leads its own process group
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
