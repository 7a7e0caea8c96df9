"""protocol/compiled.py: the mypyc-compiled modules run only when complete and built from today's sources,
and ``WARRENMQ_PURE=1`` selects the pure-Python variant."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from protocol import compiled

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _tree(root: Path) -> dict[str, str]:
    """A package with two 'compiled' modules: their sources, extension files and the manifest of digests."""
    package = root / "pkg"
    package.mkdir()
    manifest = {}
    for name in ("alpha", "beta"):
        source = package / f"{name}.py"
        source.write_text(f"NAME = {name!r}\n")
        (package / f"{name}{SUFFIX}").write_bytes(b"")
        manifest[f"pkg.{name}"] = compiled.source_digest(source)
    return manifest


def test_a_complete_build_from_the_current_sources_runs_compiled(tmp_path: Path) -> None:
    manifest = _tree(tmp_path)
    assert compiled.decide(tmp_path, manifest, {}) == (compiled.COMPILED, "")
    assert compiled.decide(tmp_path, manifest, {"WARRENMQ_PURE": "0"}) == (compiled.COMPILED, "")


def test_warrenmq_pure_selects_the_pure_variant(tmp_path: Path) -> None:
    manifest = _tree(tmp_path)
    assert compiled.decide(tmp_path, manifest, {"WARRENMQ_PURE": "1"}) == (compiled.PURE, "WARRENMQ_PURE=1")


def test_a_source_changed_after_the_build_wins_over_its_extension(tmp_path: Path) -> None:
    manifest = _tree(tmp_path)
    (tmp_path / "pkg" / "beta.py").write_text("NAME = 'edited'\n")
    build, reason = compiled.decide(tmp_path, manifest, {})
    assert (build, reason) == (compiled.PURE, "source changed since the build: pkg.beta")


def test_a_partial_build_runs_pure(tmp_path: Path) -> None:
    manifest = _tree(tmp_path)
    (tmp_path / "pkg" / f"alpha{SUFFIX}").unlink()
    assert compiled.decide(tmp_path, manifest, {}) == (compiled.PURE, "extension missing for pkg.alpha")
    (tmp_path / "pkg" / f"beta{SUFFIX}").unlink()
    assert compiled.decide(tmp_path, manifest, {}) == (compiled.PURE, "not compiled")


def test_without_a_manifest_nothing_is_compiled(tmp_path: Path) -> None:
    assert compiled.decide(tmp_path, None, {}) == (compiled.PURE, "not compiled")


def test_the_source_finder_loads_the_py_beside_an_extension(tmp_path: Path) -> None:
    _tree(tmp_path)
    finder = compiled.SourceFinder({"pkg.alpha": tmp_path / "pkg" / "alpha.py"})
    spec = finder.find_spec("pkg.alpha", [str(tmp_path / "pkg")])
    assert spec is not None
    assert spec.origin == str(tmp_path / "pkg" / "alpha.py")
    assert finder.find_spec("pkg.gamma", None) is None


def _loaded_from(environ: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, broker.core.exchanges.router, broker.session.channel_session, protocol.field_table\n"
        "import broker.session.connection_session, broker.core.topology.vhost, protocol.content_header\n"
        "from protocol import compiled, fastpath, framing\n"
        "print(json.dumps({'build': compiled.BUILD, 'router': broker.core.exchanges.router.__file__,"
        " 'field_table': protocol.field_table.__file__,"
        " 'channel_session': broker.session.channel_session.__file__,"
        " 'connection_session': broker.session.connection_session.__file__,"
        " 'vhost': broker.core.topology.vhost.__file__,"
        " 'content_header': protocol.content_header.__file__,"
        " 'wire': [m.__file__ for m in (framing._WIRE, fastpath._WIRE) if m is not None]}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True, timeout=60
    )
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def test_warrenmq_pure_loads_every_module_from_its_source() -> None:
    loaded = _loaded_from({**os.environ, "WARRENMQ_PURE": "1"})
    assert loaded["build"] == compiled.PURE
    assert loaded["router"].endswith("router.py")
    assert loaded["field_table"].endswith("field_table.py")
    assert loaded["channel_session"].endswith("channel_session.py")
    assert loaded["connection_session"].endswith("connection_session.py")
    assert loaded["vhost"].endswith("vhost.py")
    assert loaded["content_header"].endswith("content_header.py")
    assert loaded["wire"] == []  # the C wire loops are off too: framing and fastpath run their Python


def test_warrenmq_wire_native_0_turns_off_the_wire_loops_alone() -> None:
    loaded = _loaded_from({**os.environ, "WARRENMQ_WIRE_NATIVE": "0"})
    assert loaded["wire"] == []


@pytest.mark.skipif(os.environ.get("WARRENMQ_PURE", "") not in ("", "0"), reason="WARRENMQ_PURE is set")
@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler: the pure variant is the build")
def test_the_compiled_build_is_loaded_where_a_compiler_is_present() -> None:
    # Fails when setup.py could not compile (pip only warns: the pure modules would serve, slower, without
    # anyone noticing), or when a compiled module's source changed since: `make .venv/.installed-dev`.
    assert compiled.BUILD == compiled.COMPILED, compiled.describe()
    loaded = _loaded_from({k: v for k, v in os.environ.items() if k != "WARRENMQ_PURE"})
    assert loaded["build"] == compiled.COMPILED
    assert loaded["router"].endswith(SUFFIX)
    assert loaded["field_table"].endswith(SUFFIX)
    assert loaded["channel_session"].endswith(SUFFIX)  # the message path: session, queue, message (setup.py)
    # ... and around it: the connection's frame loop, the vhost's publish, the content-header reader
    assert loaded["connection_session"].endswith(SUFFIX)
    assert loaded["vhost"].endswith(SUFFIX)
    assert loaded["content_header"].endswith(SUFFIX)
    for module in (
        "broker.core.model.dispatcher",
        "broker.session.confirms",
        "broker.session.settlement",
        "broker.session.held_deliveries",
        "broker.core.queues.queue_bytes",
        "broker.core.topology.vhost_topology",
    ):
        assert compiled.is_compiled(module), module
    assert compiled.is_compiled("broker.core.exchanges.router")
    assert compiled.is_compiled("broker.core.model.message")
    # protocol._wire (setup.py builds it beside the mypyc group): both its users load it.
    assert len(loaded["wire"]) == 2
    assert all(path.endswith(SUFFIX) for path in loaded["wire"])
    assert compiled.describe() == "compiled (mypyc), C wire loops"
