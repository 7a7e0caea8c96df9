"""The asyncio edge: listener, per-connection protocol, timers. Thin: semantics live in broker.session."""
