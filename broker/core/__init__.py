"""The pure routing domain, no I/O and no pamqp, in subpackages by concept (top to bottom; each imports
only those below it, `pyproject.toml` holds the order): `broker` (the root object) > `topology` > `events` >
`policies` | `streams` > `queues` | `exchanges` | `access` > `model`.
"""
