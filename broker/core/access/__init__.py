"""Users, passwords, permissions and the one `authorize()`, login attempts; imports only `model`."""
