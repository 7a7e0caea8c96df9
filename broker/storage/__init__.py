"""Durable state: the Store protocol, the SQLite and memory stores, group commit and recovery."""
