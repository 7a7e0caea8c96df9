"""A bounded coverage-guided fuzz run (atheris) of the AMQP 1.0 frame scanner and decoders.

The harness is tests/hardening/fuzz_amqp10.py, run in a child process (libFuzzer owns the process and exits
when done) for 15 seconds. A crash, an exception other than the codec's typed errors, a scanner that splits a
stream differently when it arrives in two pieces, or a value that re-encodes differently makes libFuzzer exit
non-zero with the input that did it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.amqp10.encode import encode
from protocol.amqp10.frames import AMQP_HEADER, SASL_HEADER, TYPE_SASL, encode_frame
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Open, Transfer, encode_performative
from protocol.amqp10.sasl import SaslInit
from protocol.amqp10.sections import ApplicationProperties, Data, Header, Properties
from protocol.amqp10.terminus import Source
from protocol.amqp10.types import Described, Symbol

ROOT = Path(__file__).resolve().parents[2]


def _seeds() -> dict[str, bytes]:
    """Real shapes for the fuzzer to mutate: a client's opening and a publish; the first octet is the
    harness's cut point (and, with its top bit, "expect a protocol header")."""
    opening = (
        SASL_HEADER
        + encode_frame(
            encode(SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0g\0g")), frame_type=TYPE_SASL
        )
        + AMQP_HEADER
        + encode_frame(encode_performative(Open(container_id="c", max_frame_size=65536)))
    )
    source = Source(
        address="/queues/q", filter={Symbol("f"): Described(Symbol("rabbitmq:stream-offset-spec"), 5)}
    )
    attach = encode_frame(
        encode_performative(Attach(name="l", handle=0, role=True, source=source)), channel=1
    )
    payload = encode_sections(
        [Header(durable=True), Properties(message_id="m"), ApplicationProperties({"k": 1}), Data(b"body")]
    )
    transfer = encode_frame(
        encode_performative(Transfer(handle=0, delivery_id=0, delivery_tag=b"t"), payload), 1
    )
    return {"opening": b"\x90" + opening, "attach": b"\x10" + attach, "transfer": b"\x20" + transfer}


@pytest.mark.slow
def test_amqp10_decoders_survive_a_bounded_fuzz_run(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, seed in _seeds().items():
        (corpus / name).write_bytes(seed)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.hardening.fuzz_amqp10",
            "-max_total_time=15",
            "-timeout=5",
            "-rss_limit_mb=1024",
            str(corpus),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stderr + result.stdout
    assert result.returncode == 0, output[-4000:]
    runs = re.search(r"Done (\d+) runs", output)
    assert runs is not None, output[-2000:]
    assert int(runs.group(1)) > 1000
