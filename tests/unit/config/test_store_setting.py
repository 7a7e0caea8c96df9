"""``--store``: the durable store is SQLite under the data directory unless a PostgreSQL URL is
given by flag, WARRENMQ_STORE or rabbitmq.conf's ``warrenmq.store``; the ready line and the logs name it
without its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.model import ServerConfig, store_display
from broker.config.show import render
from tests.unit.config.test_precedence import _load

DSN = "postgresql://warren:s3cret@db.example:5433/warrenmq"


def test_sqlite_under_the_data_directory_is_the_default(tmp_path: Path) -> None:
    _loaded, config = _load(tmp_path, ["--data-dir", str(tmp_path / "d")], {})
    assert config.store is None
    assert store_display(config) == f"sqlite:{tmp_path / 'd'}"
    assert store_display(ServerConfig(data_dir=None)) is None  # in memory


def test_flag_beats_environment_beats_file(tmp_path: Path) -> None:
    conf = "warrenmq.store = postgresql://u:p@from-file:5432/db\n"
    env = {"WARRENMQ_STORE": "postgresql://u:p@from-env:5432/db"}
    loaded, config = _load(tmp_path, ["--store", DSN], env, conf)
    assert config.store == DSN
    assert loaded.resolved["store"].source == "--store"
    _loaded, config = _load(tmp_path, [], env, conf)
    assert config.store == "postgresql://u:p@from-env:5432/db"
    loaded, config = _load(tmp_path, [], {}, conf)
    assert config.store == "postgresql://u:p@from-file:5432/db"
    assert loaded.resolved["store"].source.endswith("rabbitmq.conf:1 warrenmq.store")
    assert not [w for w in loaded.warnings if "warrenmq.store" in w]  # a known key


def test_the_store_is_named_without_user_or_password(tmp_path: Path) -> None:
    _loaded, config = _load(tmp_path, ["--store", DSN], {})
    assert store_display(config) == "postgresql://db.example:5433/warrenmq"


def test_a_multi_host_store_is_named_with_its_hosts(tmp_path: Path) -> None:
    dsn = "postgresql://u:secret@db-a:5432,db-b:5433/warrenmq?target_session_attrs=read-write"
    _loaded, config = _load(tmp_path, ["--store", dsn], {})
    assert store_display(config) == "postgresql://db-a:5432,db-b:5433/warrenmq"


@pytest.mark.parametrize("value", ["none", "sqlite", ""])
def test_none_or_sqlite_means_the_default(tmp_path: Path, value: str) -> None:
    assert _load(tmp_path, ["--store", value], {})[1].store is None


def test_anything_else_stops_with_the_expected_form_and_never_echoes_a_password(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        _load(tmp_path, ["--store", "mysql://u:hunter2@h/db"], {})
    assert "postgresql://user:password@host:port/db" in str(stopped.value)
    assert "hunter2" not in str(stopped.value)


def test_config_show_hides_the_stores_password(tmp_path: Path) -> None:
    loaded, _config = _load(tmp_path, ["--store", DSN], {})
    shown = render(loaded, "json")
    assert "s3cret" not in shown
    assert "postgresql://warren:********@db.example:5433/warrenmq" in shown
