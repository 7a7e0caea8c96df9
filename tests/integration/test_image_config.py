"""WarrenMQ started the way the rabbitmq image starts RabbitMQ: RABBITMQ_* environment,
/etc/rabbitmq/rabbitmq.conf, enabled_plugins and a definitions file (under a temporary root:
WARRENMQ_SYS_PREFIX), no flags."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pika
import pytest

ROOT = Path(__file__).resolve().parents[2]

DEFINITIONS = {
    "vhosts": [{"name": "prod"}],
    "queues": [{"name": "orders", "vhost": "prod", "durable": True, "auto_delete": False, "arguments": {}}],
}


def _image_root(tmp_path: Path, conf: str, plugins: str | None) -> Path:
    etc = tmp_path / "etc/rabbitmq"
    etc.mkdir(parents=True)
    (etc / "definitions.json").write_text(json.dumps(DEFINITIONS))
    (etc / "rabbitmq.conf").write_text(conf.replace("$ETC", str(etc)))
    if plugins is not None:
        (etc / "enabled_plugins").write_text(plugins)
    return tmp_path


def _serve(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, Any], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "WARRENMQ_SYS_PREFIX": str(root), "WARRENMQ_DATA_DIR": "none", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        _, stderr = process.communicate(timeout=10)
        raise AssertionError(f"broker exited {process.returncode}: {stderr}")
    return process, json.loads(line), process.stdout.readline()


def _stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0
    return stderr


CONF = """
# as a compose file would mount it
listeners.tcp.default = 127.0.0.1:0
management.tcp.port = 0
prometheus.tcp.port = 0
loopback_users.guest = false
load_definitions = $ETC/definitions.json
heartbeat = 20
cluster_name = ci-cluster
queue_index_embed_msgs_below = 4096
"""


def test_image_environment_conf_plugins_and_definitions(tmp_path: Path) -> None:
    secret = tmp_path / "pass"
    secret.write_text("s3cret\n")
    env = {
        "RABBITMQ_DEFAULT_USER": "app",
        "RABBITMQ_DEFAULT_PASS_FILE": str(secret),
        "RABBITMQ_DEFAULT_VHOST": "prod",
        "WARRENMQ_PROFILE": "rabbitmq-4.0",
    }
    root = _image_root(
        tmp_path / "root", CONF, "[rabbitmq_management,rabbitmq_prometheus,rabbitmq_shovel].\n"
    )
    process, ready, startup = _serve(root, env)
    try:
        assert startup.rstrip().endswith("Server startup complete; 3 plugins started.")
        port = ready["amqp_port"]
        assert ready["amqp_host"] == "127.0.0.1"
        params = pika.ConnectionParameters(
            "127.0.0.1", port, "prod", pika.PlainCredentials("app", "s3cret"), connection_attempts=1
        )
        connection = pika.BlockingConnection(params)
        properties = connection._impl.server_properties
        assert (properties["product"], properties["version"]) == ("RabbitMQ", "4.0.9")
        assert properties["cluster_name"] == "ci-cluster"
        assert connection._impl.params.heartbeat == 20
        # The definitions file's queue is there before anyone could connect.
        assert connection.channel().queue_declare("orders", passive=True).method.message_count == 0
        connection.close()
        with pytest.raises(pika.exceptions.ProbableAuthenticationError):
            pika.BlockingConnection(
                pika.ConnectionParameters("127.0.0.1", port, "prod", pika.PlainCredentials("guest", "guest"))
            )
        request = urllib.request.Request(f"http://127.0.0.1:{ready['management_port']}/api/overview")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"app:s3cret").decode())
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
    finally:
        stderr = _stop(process)
    assert "unknown setting 'queue_index_embed_msgs_below' ignored" in stderr
    assert "plugins not implemented by WarrenMQ, ignored: rabbitmq_shovel" in stderr


def test_enabled_plugins_without_management_means_no_http_listener(tmp_path: Path) -> None:
    conf = "listeners.tcp.default = 127.0.0.1:0\nprometheus.tcp.port = 0\n"  # 15692 may be taken here
    root = _image_root(tmp_path, conf, "[rabbitmq_prometheus].\n")
    process, ready, startup = _serve(root, {})
    try:
        assert ready["management_port"] is None
        assert startup.rstrip().endswith("Server startup complete; 0 plugins started.")
    finally:
        _stop(process)


@pytest.mark.parametrize(
    ("conf", "plugins", "where"),
    [
        ("heartbeat = 10\nlisteners.tcp.default 5672\n", None, "rabbitmq.conf, line 2: syntax error"),
        ("frame_max = big\n", None, "rabbitmq.conf, line 1: frame_max: expected an integer"),
        ("heartbeat = 10\n", "[rabbitmq_management]\n", "enabled_plugins, line 1: syntax error"),
    ],
)
def test_a_malformed_file_stops_the_broker_naming_file_and_line(
    tmp_path: Path, conf: str, plugins: str | None, where: str
) -> None:
    root = _image_root(tmp_path, conf, plugins)
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "WARRENMQ_SYS_PREFIX": str(root), "WARRENMQ_DATA_DIR": "none"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"{root}/etc/rabbitmq/" in result.stderr
    assert where in result.stderr
