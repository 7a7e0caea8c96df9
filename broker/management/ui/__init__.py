"""The web UI: its built assets (`dist/`, from ui/ by `make ui`) and the handlers that serve them."""
