"""The documentation's own tests: shell examples accounted for, links inside the repository."""
