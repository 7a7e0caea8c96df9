"""The image run as the rabbitmq image's users run it: `-p` mappings, RABBITMQ_DEFAULT_* variables, mounted
rabbitmq.conf / definitions / enabled_plugins, a named volume kept across replacing the container, the
HEALTHCHECK, `podman stop`, uid 999 and a read-only root filesystem. Clients (pika, urllib) reach the broker
only through the host ports podman maps."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pika
import pytest

from tests.container.conftest import Container, Containers, podman

# A cold image build runs inside the first test's set-up.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _connect(
    port: int, vhost: str = "/", user: str = "guest", password: str = "guest"
) -> pika.BlockingConnection:
    params = pika.ConnectionParameters(
        "127.0.0.1", port, vhost, pika.PlainCredentials(user, password), connection_attempts=1
    )
    return pika.BlockingConnection(params)


def _http_get(port: int, path: str, user: str = "guest", password: str = "guest") -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def test_default_user_and_vhost_from_the_environment_over_mapped_ports(containers: Containers) -> None:
    broker = containers.run(
        "--env=RABBITMQ_DEFAULT_USER=app",
        "--env=RABBITMQ_DEFAULT_PASS=app-secret",
        "--env=RABBITMQ_DEFAULT_VHOST=prod",
        ports=(5672, 15672, 15692),
    )
    broker.wait_started()
    connection = _connect(broker.port(5672), "prod", "app", "app-secret")
    channel = connection.channel()
    channel.queue_declare("jobs")
    channel.basic_publish("", "jobs", b"over the mapped port")
    method, _, body = channel.basic_get("jobs", auto_ack=True)
    assert method is not None
    assert body == b"over the mapped port"
    connection.close()
    # As in RabbitMQ: with RABBITMQ_DEFAULT_USER set, guest is not created.
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        _connect(broker.port(5672), "prod")
    # The -management image's plugins: the HTTP API and the Prometheus endpoint on their mapped ports.
    status, whoami = _http_get(broker.port(15672), "/api/whoami", "app", "app-secret")
    assert status == 200
    assert json.loads(whoami)["name"] == "app"
    _, vhosts = _http_get(broker.port(15672), "/api/vhosts", "app", "app-secret")
    assert [vhost["name"] for vhost in json.loads(vhosts)] == ["prod"]
    status, metrics = _http_get(broker.port(15692), "/metrics")
    assert status == 200
    assert b"rabbitmq_connections_opened_total" in metrics


def test_uid_999_owns_the_broker_process_and_what_it_writes_in_the_volume(containers: Containers) -> None:
    volume = containers.volume()
    broker = containers.run(f"--volume={volume}:/var/lib/rabbitmq")
    broker.wait_started()
    process_uid = broker.exec("sh", "-c", "awk '/^Uid:/ {print $2}' /proc/1/status")
    assert process_uid.stdout.strip() == "999"
    owners = broker.exec("sh", "-c", "stat -c '%u:%g %n' /var/lib/rabbitmq/* | sort")
    assert owners.returncode == 0
    assert owners.stdout
    assert {line.split()[0] for line in owners.stdout.splitlines()} == {"999:999"}


CONF = """\
listeners.tcp.default = 5673
load_definitions = /etc/rabbitmq/definitions.json
cluster_name = from-the-mounted-conf
"""

DEFINITIONS = {
    "users": [{"name": "svc", "password": "svc-secret", "tags": "administrator"}],
    "vhosts": [{"name": "app"}],
    "permissions": [{"user": "svc", "vhost": "app", "configure": ".*", "write": ".*", "read": ".*"}],
    "queues": [{"name": "orders", "vhost": "app", "durable": True, "auto_delete": False, "arguments": {}}],
    "exchanges": [],
    "bindings": [],
}


def test_mounted_rabbitmq_conf_definitions_and_enabled_plugins(
    containers: Containers, tmp_path: Path
) -> None:
    (tmp_path / "rabbitmq.conf").write_text(CONF)
    (tmp_path / "definitions.json").write_text(json.dumps(DEFINITIONS))
    # No plugin at all: no management listener, as with RabbitMQ.
    (tmp_path / "enabled_plugins").write_text("[].\n")
    broker = containers.run(
        f"--volume={tmp_path / 'rabbitmq.conf'}:/etc/rabbitmq/rabbitmq.conf:ro",
        f"--volume={tmp_path / 'definitions.json'}:/etc/rabbitmq/definitions.json:ro",
        f"--volume={tmp_path / 'enabled_plugins'}:/etc/rabbitmq/enabled_plugins:ro",
        ports=(5673, 15672),
    )
    broker.wait_started()
    assert "Server startup complete; 0 plugins started." in broker.logs()
    connection = _connect(broker.port(5673), "app", "svc", "svc-secret")
    assert connection._impl.server_properties["cluster_name"] == "from-the-mounted-conf"
    declared = connection.channel().queue_declare("orders", passive=True)
    assert declared.method.message_count == 0
    connection.close()
    # The mapped management port leads nowhere: nothing listens on 15672 inside the container.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _http_get(broker.port(15672), "/api/overview", "svc", "svc-secret")


def _fill(port: int) -> None:
    connection = _connect(port)
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("durable-q", durable=True)
    channel.queue_declare("transient-q", durable=False)
    persistent = pika.BasicProperties(delivery_mode=2)
    channel.basic_publish("", "durable-q", b"persistent", persistent)
    channel.basic_publish("", "durable-q", b"transient", pika.BasicProperties(delivery_mode=1))
    channel.basic_publish("", "transient-q", b"in a transient queue", persistent)
    connection.close()


def test_named_volume_keeps_durable_queues_and_persistent_messages_across_replacing_the_container(
    containers: Containers,
) -> None:
    volume = containers.volume()
    first = containers.run(f"--volume={volume}:/var/lib/rabbitmq")
    first.wait_started()
    _fill(first.port(5672))
    assert first.stop() == 0
    podman("rm", first.name)

    second = containers.run(f"--volume={volume}:/var/lib/rabbitmq")
    second.wait_started()
    connection = _connect(second.port(5672))
    channel = connection.channel()
    # RabbitMQ keeps a durable queue's persistent messages only; transient queues are gone.
    assert channel.queue_declare("durable-q", passive=True).method.message_count == 1
    method, properties, body = channel.basic_get("durable-q", auto_ack=True)
    assert method is not None
    assert (body, properties.delivery_mode, method.redelivered) == (b"persistent", 2, False)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as missing:
        channel.queue_declare("transient-q", passive=True)
    assert missing.value.reply_code == 404
    connection.close()


def test_podman_stop_closes_client_connections_with_connection_forced_and_exits_0(
    containers: Containers,
) -> None:
    broker = containers.run()
    broker.wait_started()
    connection = _connect(broker.port(5672))
    connection.channel().queue_declare("q")
    closed: list[BaseException] = []

    def wait_for_close() -> None:
        try:
            while True:
                connection.process_data_events(time_limit=1)
        except pika.exceptions.AMQPConnectionError as error:
            closed.append(error)

    reader = threading.Thread(target=wait_for_close)
    reader.start()
    # SIGTERM, then SIGKILL after 10 s: exit code 0 means the broker closed down by itself, not 137.
    assert broker.stop(timeout_s=10) == 0
    reader.join(timeout=30)
    assert len(closed) == 1
    assert isinstance(closed[0], pika.exceptions.ConnectionClosedByBroker)
    assert (closed[0].reply_code, closed[0].reply_text) == (
        320,
        "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'",
    )


def test_healthcheck_is_kept_in_the_image_and_follows_the_broker(containers: Containers, image: str) -> None:
    # --format docker keeps HEALTHCHECK (OCI images have no place for it).
    inspected = podman("image", "inspect", "--format", "{{json .Config.Healthcheck}}", image)
    configured = json.loads(inspected.stdout)
    assert configured["Test"] == ["CMD", "rabbitmq-diagnostics", "-q", "ping"]
    broker = containers.run()
    broker.wait_started()
    assert podman("healthcheck", "run", broker.name, check=False).returncode == 0
    assert broker.inspect()["State"]["Health"]["Status"] == "healthy"
    # A container of the image that runs no broker: the same check fails.
    idle = containers.run(command=("sleep", "300"))
    failed = podman("healthcheck", "run", idle.name, check=False)
    assert failed.returncode == 1
    assert "unhealthy" in failed.stdout + failed.stderr


def test_read_only_root_filesystem_with_only_the_volume_writable(containers: Containers) -> None:
    volume = containers.volume()
    # --read-only-tmpfs=false: not even /tmp or /run is writable (Docker's --read-only adds no tmpfs either).
    broker = containers.run(
        "--read-only", "--read-only-tmpfs=false", f"--volume={volume}:/var/lib/rabbitmq", ports=(5672, 15672)
    )
    broker.wait_started()
    for path in ("/tmp/probe", "/etc/rabbitmq/probe", "/opt/warrenmq/probe"):
        assert broker.exec("touch", path).returncode != 0, path
    assert broker.exec("touch", "/var/lib/rabbitmq/probe").returncode == 0
    connection = _connect(broker.port(5672))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("kept", durable=True)
    channel.basic_publish("", "kept", b"stored", pika.BasicProperties(delivery_mode=2))
    connection.close()
    status, _ = _http_get(broker.port(15672), "/api/queues/%2F/kept")
    assert status == 200
    assert _becomes_healthy(broker.name)
    assert broker.stop() == 0


def _becomes_healthy(name: str, deadline_s: float = 60.0) -> bool:
    """The image's HEALTHCHECK (rabbitmq-diagnostics ping, a 3 s timeout) passes within the deadline: one run
    on two loaded cores can exceed its timeout, as Docker's retries allow for (--retries=5)."""
    deadline = time.monotonic() + deadline_s
    while podman("healthcheck", "run", name, check=False).returncode != 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def test_tls_listener_from_a_mounted_certificate(containers: Containers, tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    import ssl

    authority = trustme.CA()
    certificate = authority.issue_cert("localhost", "127.0.0.1")
    certificate.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    certificate.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    (tmp_path / "rabbitmq.conf").write_text(
        "listeners.ssl.default = 5671\n"
        "ssl_options.cacertfile = /certs/ca.pem\n"
        "ssl_options.certfile = /certs/cert.pem\n"
        "ssl_options.keyfile = /certs/key.pem\n"
        "ssl_options.verify = verify_none\n"
    )
    # Readable by uid 999 inside (pytest makes its directories 0700).
    tmp_path.chmod(0o755)
    for path in tmp_path.iterdir():
        path.chmod(0o644)
    broker: Container = containers.run(
        f"--volume={tmp_path}:/certs:ro",
        f"--volume={tmp_path / 'rabbitmq.conf'}:/etc/rabbitmq/rabbitmq.conf:ro",
        ports=(5671,),
    )
    broker.wait_started()
    context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    params = pika.ConnectionParameters(
        "127.0.0.1",
        broker.port(5671),
        ssl_options=pika.SSLOptions(context, "localhost"),
        connection_attempts=1,
    )
    connection = pika.BlockingConnection(params)
    assert connection.is_open
    connection.close()
