"""Outer ring: the RabbitMQ-compatible management plane, in subpackages by concept (top to bottom, as
`pyproject.toml` holds them): `addons` > `control` > `api` > `metrics` | `definitions` | `ui` > `views` >
`context` > `stats` > `errors` | `lazy_http`."""
