"""enabled_plugins switches the plugin exchange types as RabbitMQ's plugins do (a type whose plugin is off is
an unknown exchange type; without the file every type WarrenMQ implements is on), and the overview reports
the release the profile emulates, or WarrenMQ's own with --report-as warrenmq."""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from broker import __version__
from tests.integration.test_image_config import _image_root, _serve, _stop

PLUGIN_TYPES = ("x-consistent-hash", "x-delayed-message", "x-random", "x-recent-history", "x-modulus-hash")


def _declare(port: int, type_name: str) -> str:
    """'ok' or the close the broker answers with (channel or connection)."""
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    try:
        channel = connection.channel()
        args = {"x-delayed-type": "direct"} if type_name == "x-delayed-message" else None
        channel.exchange_declare(f"ex-{type_name}", type_name, arguments=args)
        return "ok"
    except (pika.exceptions.ChannelClosedByBroker, pika.exceptions.ConnectionClosedByBroker) as error:
        return f"{error.args[0]} {error.args[1]}"
    finally:
        if connection.is_open:
            connection.close()


def _overview(ready: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{ready['management_port']}/api/overview")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=5) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


def test_a_plugin_exchange_type_needs_its_plugin(tmp_path: Path) -> None:
    conf = "listeners.tcp.default = 127.0.0.1:0\nmanagement.tcp.port = 0\n"
    root = _image_root(tmp_path, conf, "[rabbitmq_management,rabbitmq_random_exchange].\n")
    process, ready, _ = _serve(root, {"HOME": str(tmp_path)})
    try:
        results = {kind: _declare(ready["amqp_port"], kind) for kind in PLUGIN_TYPES}
    finally:
        _stop(process)
    unknown = {kind: f"406 PRECONDITION_FAILED - unknown exchange type '{kind}'" for kind in PLUGIN_TYPES}
    assert results == {**unknown, "x-random": "ok"}


@pytest.mark.parametrize("report_as", ["rabbitmq", "warrenmq"])
def test_without_a_plugins_file_every_type_is_on_and_the_overview_names_the_release(
    tmp_path: Path, report_as: str
) -> None:
    conf = "listeners.tcp.default = 127.0.0.1:0\nmanagement.tcp.port = 0\nprometheus.tcp.port = 0\n"
    conf += "cluster_name = ci-cluster\n"  # every port ephemeral: 15692 may be taken on a shared machine
    root = _image_root(tmp_path, conf, None)
    env = {"HOME": str(tmp_path), "WARRENMQ_REPORT_AS": report_as, "RABBITMQ_NODENAME": "rabbit@ci"}
    process, ready, _ = _serve(root, env)
    try:
        assert {kind: _declare(ready["amqp_port"], kind) for kind in PLUGIN_TYPES} == dict.fromkeys(
            PLUGIN_TYPES, "ok"
        )
        overview = _overview(ready)
    finally:
        _stop(process)
    release = ("RabbitMQ", "3.13.7") if report_as == "rabbitmq" else ("WarrenMQ", __version__)
    assert (overview["product_name"], overview["product_version"]) == release
    assert overview["rabbitmq_version"] == overview["management_version"] == release[1]
    assert overview["warrenmq_version"] == __version__
    assert (overview["node"], overview["cluster_name"]) == ("rabbit@ci", "ci-cluster")
