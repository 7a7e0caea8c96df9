"""A private RabbitMQ 4.0.5 node (the second oracle): Debian trixie's rabbitmq-server in a podman container.

The image is made once per machine by docker/make-rabbitmq-oracle-image.sh (mmdebstrap, cached in podman's
storage), behind a lock so that parallel workers wait for one build. The container shares the host's network,
as the Debian 3.10.8 node of ``rabbitmq_node`` listens on the host, with ports of its own: AMQP, Erlang
distribution, its own epmd (``ERL_EPMD_PORT``, so it never meets the host's epmd) and the management
plugin's HTTP listener. guest may log in from loopback (RabbitMQ's default ``loopback_users``), which is where
the tests connect from. The container is removed when it stops.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.ports import free_port

from .rabbitmq_node import ERL_SCHEDULER_ARGS, RabbitMQNode

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "warrenmq-oracle/rabbitmq:4.0.5"
IMAGE_SCRIPT = ROOT / "docker" / "make-rabbitmq-oracle-image.sh"
# Machine-wide: every worker of every run waits for the one build (podman's storage is machine-wide too).
IMAGE_LOCK = Path("/tmp/warrenmq-rabbitmq4-oracle-image.lock")
# mmdebstrap fetches and unpacks ~200 packages (Erlang is most of them): minutes on a cold machine.
IMAGE_BUILD_TIMEOUT_S = 1800
SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
CONFIG_DIR = "/etc/rabbitmq"  # where the container sees the node's configuration directory

_image_problem: list[str | None] = []  # memo of image_problem(): one build attempt per process


def _podman(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout_s, check=False)


def image_problem() -> str | None:
    """Why the 4.0.5 oracle cannot run here (the test's skip reason), or None once its image is there.
    Builds the image when it is missing; a build that fails for another reason than a missing tool or an
    unreachable trixie is an error, not a skip."""
    if _image_problem:
        return _image_problem[0]
    problem: str | None = None
    if shutil.which("podman") is None:
        problem = "podman is not installed (.ci/run installs podman, runc and mmdebstrap with apt)"
    elif _podman("image", "exists", IMAGE).returncode != 0:
        with IMAGE_LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            build = subprocess.run(
                ["bash", str(IMAGE_SCRIPT)],
                capture_output=True,
                text=True,
                timeout=IMAGE_BUILD_TIMEOUT_S,
                check=False,
            )
        if build.returncode == 2:
            problem = f"no RabbitMQ 4.0.5 image: {build.stderr.strip().splitlines()[-1]}"
        elif build.returncode != 0:
            raise RuntimeError(f"{IMAGE_SCRIPT.name} failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}")
    _image_problem.append(problem)
    return problem


@dataclass
class RabbitMQ4Node(RabbitMQNode):
    """One container of the 4.0.5 image, with the management plugin on ``http_port``."""

    epmd_port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    # More rabbitmq.conf lines (a TLS listener, auth_mechanisms...), and files written beside it: the
    # container sees them under /etc/rabbitmq (CONFIG_DIR), e.g. certificates the extra lines name.
    extra_config: str = ""
    config_files: dict[str, bytes] = field(default_factory=dict)

    @property
    def node_name(self) -> str:
        return f"warrenmq-oracle4-{self.port}@localhost"

    @property
    def container(self) -> str:
        return f"warrenmq-oracle4-{self.port}-{self.dist_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "log" / "stdout"  # RABBITMQ_LOGS=-: the node logs to the container's stdout

    def _pick_ports(self) -> None:
        super()._pick_ports()
        self.epmd_port, self.http_port = free_port(), free_port()

    def _output(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def _container_environment(self) -> dict[str, str]:
        return {
            "RABBITMQ_NODENAME": self.node_name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_CONFIG_FILE": "/etc/rabbitmq/rabbitmq",
            "RABBITMQ_ENABLED_PLUGINS": ",".join(("rabbitmq_management", *self.plugins)),
            "RABBITMQ_LOGS": "-",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": " ".join(
                ("-kernel", "inet_dist_use_interface", "{127,0,0,1}", *ERL_SCHEDULER_ARGS, *self.erl_args)
            ),
            "RABBITMQ_CTL_ERL_ARGS": " ".join(ERL_SCHEDULER_ARGS),
        }

    def _launch(self, timeout_s: float) -> None:
        config = self.base_dir / "etc"
        config.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "log").mkdir(exist_ok=True)
        for name, content in self.config_files.items():
            (config / name).write_bytes(content)
        (config / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.http_port}\n" + self.extra_config
        )
        environment = [f"--env={key}={value}" for key, value in self._container_environment().items()]
        stdout = self.log_file.open("wb")
        self.process = subprocess.Popen(
            [
                "podman",
                "run",
                "--rm",
                "--name",
                self.container,
                "--network",
                "host",
                "--volume",
                f"{config}:{CONFIG_DIR}",  # it writes enabled_plugins there
                *environment,
                IMAGE,
                SERVER,
            ],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stdout.close()
        self._wait_ready(timeout_s)
        self._wait_http(timeout_s)

    def _wait_http(self, timeout_s: float) -> None:
        """The management listener starts with its plugin, which may be after the AMQP listener."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if requests.get(self.http_url + "/api/overview", auth=("guest", "guest"), timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(
            f"RabbitMQ 4.0.5's management API did not answer in {timeout_s}s; see {self.log_file}"
        )

    def ctl(self, *args: str, timeout_s: float = 60.0) -> str:
        """``rabbitmqctl`` inside the container (its epmd port and cookie are the node's)."""
        # The package's /usr/sbin/rabbitmqctl switches to the rabbitmq user, whose home holds another cookie
        # than root's, under which the server runs here.
        ctl = SERVER.replace("rabbitmq-server", "rabbitmqctl")
        done = _podman("exec", self.container, ctl, "-n", self.node_name, *args, timeout_s=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process is None:
            return
        _podman("stop", "--time", "10", self.container, timeout_s=timeout_s + 30)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _podman("rm", "--force", "--time", "0", self.container, timeout_s=timeout_s + 30)
            self.process.kill()
            self.process.wait()
        self.process = None
