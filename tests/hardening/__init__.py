"""The hardening suite (issue 17): the broker protects itself and its tenants; real clients, real sockets."""
