"""Builds the optional native parts; everything else is in pyproject.toml.

1. The journal's C lane (broker/journal/_lane.c). Without it the journal uses its pure-Python lane
   (broker.journal.lane.PyLane), which costs about three times as much per journaled delivery.
2. The wire loops (protocol/_wire.c): frame scanning with a publish's three frames as one item, and the
   delivery encoder. Without it protocol/framing.py and protocol/fastpath.py do the same in Python.
3. The message segment files' record packer and writer (broker/storage/_segment.c, linked with zlib): the
   copies and CRC-32s of a group commit's message records, its writev and fdatasync, in one release of the
   GIL. Without it broker/storage/segment_format.py packs them in Python, holding the GIL the loop thread
   needs for ~0.8 us more per 1 KiB message, and waits for the GIL after each system call.
4. The routing core and the field-table decoder, compiled with mypyc (`MYPYC_MODULES`; docs/benchmarks.md
   has what each part gains, and why the rest stays Python). setup.py also writes protocol/_compiled.json, the
   digest of each compiled source, which protocol/compiled.py checks at startup so that an extension never
   runs older code than its ``.py``.

All are ``optional``: without a C compiler (or without mypyc) the install still succeeds and the pure-Python
modules serve. ``WARRENMQ_PURE=1`` at build time skips mypyc and removes in-place extensions an earlier
editable build left; at run time it loads the pure modules even where the compiled ones are installed.
"""

import hashlib
import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import Extension, setup

ROOT = Path(__file__).resolve().parent
MANIFEST = ROOT / "protocol" / "_compiled.json"
# The shared library of the compiled group is protocol/native__mypyc*.so (inside a package, so that editable
# installs find it as they find the packages).
GROUP = "protocol.native"

# Chosen by measurement (docs/benchmarks.md, "Compiled build (mypyc)"): routing gains 1.3-2.5x in
# `make bench` (topic, direct, fanout, headers, exchange-to-exchange), the field-table decoder up to ~2x.
# The message path compiles as one piece: the channel session (publish -> route, deliver, ack) together with
# the per-message types it reads and writes (message, envelope, queue and consumer, unacked, stats). Split,
# it does not pay: interpreted code reads an attribute of a mypyc object through a getset descriptor (~2x a
# __slots__ member, which CPython 3.11 specializes), so the types alone cost 2-13% more broker CPU per message
# (perf/ab.py, 3 rounds) and with the queue +-3% (neutral); with the session as well, 13-21% less on
# publish -> consume, ack each, ack/50 and fanout. Message and Envelope allow interpreted subclasses
# (PagedMessage, TimedEnvelope). The next step compiled what py-spy showed as self time in interpreted code
# around it: the connection's frame loop and the dispatcher (alone: -8% to +7%, mixed), then with them the
# vhost's publish (and VhostTopology, its base class), the content-header reader, confirms, settlement, held
# deliveries and the queue byte counters: 27-38% less broker CPU per message on top of the step before.
# Then the store's group commit (batch_writes, writer) and the segment log it writes with: the loop thread
# records each persistent message in the batch, and the writer thread holds the GIL the loop needs while it
# indexes the batch's records; compiled, persistent confirms cost 6.20 -> 5.90 us of broker CPU per message
# (153k -> 162k msg/s median, perf/ab.py, 5 rounds), ack1p 8.6 -> 8.4 us. (StoreWriter's thread attribute
# is not called ``_thread``: mypyc's C name for it collides with the ``__thread`` keyword.)
# Then the exchange entity: the router and the vhost's publish read its kind, e2e_bindings, internal and stats
# for every publish, each a generic attribute lookup while it was interpreted (perf/ab.py, 5 rounds: pubsub
# 2.20 -> 2.10 us of broker CPU per message, ack1 3.55 -> 3.30, fanout 8.67 -> 7.33). Nothing takes a weak
# reference to an exchange, so its ``__weakref__`` slot went. Likewise what a channel reads per publish and
# delivery: the content assembler's state and size limit, the permission cache's approved exchanges, the event
# bus's ``stepping`` (with the first two, 5 rounds: pubsub 1.77 -> 1.57 us, ack1 2.85 -> 2.75, confirm 4.40
# -> 4.20).
# Left out, with the reason:
# - protocol/fastpath.py, protocol/framing.py: struct-bound; compiled they decode and encode within 1-6% of
#   Python (noise), so they would only add compile time;
# - protocol/header_rewrite.py: off the per-message path (dead-lettering, CC/BCC), nothing to gain;
# - broker/server/amqp_protocol.py: not tried; an asyncio.Protocol subclass (mypyc would make it a non-native
#   class), and its per-read work is a few counters and a list append;
# - broker/core/exchanges/bindings.py: mypyc's dataclass support cannot resolve the `object` field annotation
#   of Binding (KeyError at import); bindings run at bind time, not per message.
MYPYC_MODULES = [
    "protocol/field_table.py",
    "broker/core/model/expiration.py",
    "broker/core/model/message.py",
    "broker/core/model/envelope.py",
    "broker/core/queues/unacked.py",
    "broker/core/queues/queue.py",
    "broker/core/model/stats.py",
    "broker/session/channel_session.py",
    "broker/session/connection_session.py",
    "broker/core/model/dispatcher.py",
    "broker/session/confirms.py",
    "broker/session/confirm_state.py",
    "broker/session/settlement.py",
    "broker/session/held_deliveries.py",
    "broker/core/queues/queue_bytes.py",
    "broker/core/topology/vhost_topology.py",
    "broker/core/topology/vhost.py",
    "protocol/content_header.py",
    "broker/core/exchanges/topic_trie.py",
    "broker/core/exchanges/router.py",
    "broker/core/exchanges/exchange.py",
    "protocol/channel_state.py",
    "broker/core/access/access.py",
    "broker/core/events/events.py",
    "broker/core/exchanges/default.py",
    "broker/core/exchanges/direct.py",
    "broker/core/exchanges/fanout.py",
    "broker/core/exchanges/topic.py",
    "broker/core/exchanges/headers.py",
    "broker/storage/batch_writes.py",
    "broker/storage/writer.py",
    "broker/storage/segments.py",
]


def _warn(text: str) -> None:
    print(f"warning: {text}; the pure-Python modules will serve", file=sys.stderr)


def _remove_in_place_builds(keep: frozenset[str] = frozenset()) -> None:
    """An editable install builds extensions beside the sources: a pure or failed build, or a module taken
    out of `MYPYC_MODULES`, must not leave an earlier one there to shadow its ``.py``."""
    if not keep:
        MANIFEST.unlink(missing_ok=True)
    sources = [*sorted(ROOT.glob("protocol/**/*.py")), *sorted(ROOT.glob("broker/**/*.py"))]
    sources.append(ROOT / (GROUP.replace(".", "/") + "__mypyc.py"))
    for source in sources:
        if source.relative_to(ROOT).as_posix() in keep:
            continue
        for suffix in EXTENSION_SUFFIXES:
            source.with_suffix(suffix).unlink(missing_ok=True)


# The commands that compile; pip also runs setup.py for metadata (egg_info, dist_info), which needs no mypyc
# pass (each costs a type check of the set).
BUILD_COMMANDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def mypyc_extensions() -> list[Extension]:
    if not BUILD_COMMANDS.intersection(sys.argv[1:]):
        return []
    if os.environ.get("WARRENMQ_PURE", "") not in ("", "0"):
        _remove_in_place_builds()
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _remove_in_place_builds()
        _warn("mypyc is not installed")
        return []
    _remove_in_place_builds(keep=frozenset(MYPYC_MODULES) | {GROUP.replace(".", "/") + "__mypyc.py"})
    try:
        extensions = mypycify(list(MYPYC_MODULES), opt_level="3", group_name=GROUP)
    except (Exception, SystemExit) as error:  # mypyc exits on a type error it cannot compile
        _remove_in_place_builds()
        _warn(f"mypyc could not compile the modules ({error!r})")
        return []
    for extension in extensions:
        extension.optional = True
    digests = {
        source.removesuffix(".py").replace("/", "."): hashlib.sha256((ROOT / source).read_bytes()).hexdigest()
        for source in MYPYC_MODULES
    }
    MANIFEST.write_text(json.dumps({"modules": digests}, indent=1, sort_keys=True) + "\n")
    return extensions


C_FLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension(
            "broker.journal._lane",
            sources=["broker/journal/_lane.c"],
            extra_compile_args=C_FLAGS,
            optional=True,
        ),
        Extension("protocol._wire", sources=["protocol/_wire.c"], extra_compile_args=C_FLAGS, optional=True),
        Extension(
            "broker.storage._segment",
            sources=["broker/storage/_segment.c"],
            libraries=["z"],
            extra_compile_args=C_FLAGS,
            optional=True,
        ),
        *mypyc_extensions(),
    ]
)
