"""AMQP 0-9-1 wire format, sans-I/O, on pamqp: framing, codecs, handshake negotiation and typed errors."""

from protocol import compiled as _compiled

# Before any submodule loads: the mypyc-compiled modules or their pure sources (protocol/compiled.py).
_compiled.select()
