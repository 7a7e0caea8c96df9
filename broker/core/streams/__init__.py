"""Streams: the segment log, offsets, filters and the stream queue on top of `queues`; imports `queues`
and `model`."""
