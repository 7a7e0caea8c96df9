"""The hardening suite: the broker protects itself and its tenants; real clients, real sockets."""
