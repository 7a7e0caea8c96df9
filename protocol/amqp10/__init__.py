"""AMQP 1.0 wire format, sans-I/O: the type system (``types``, ``encode``, ``decode``), frames and the frame
scanner (``frames``), composites (``composite``) and the performatives, outcomes, terminus, SASL frames and
message sections built on them. No session logic: that is the broker's."""
