"""AMQP 0-9-1 wire format, sans-I/O, on pamqp: framing, codecs, handshake negotiation and typed errors."""
