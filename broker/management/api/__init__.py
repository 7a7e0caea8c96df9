"""The HTTP API: the aiohttp app, authentication, routing, paging, message peeking and one module per
resource (`resources`)."""
