"""Policies, operator policies and runtime parameters: validation and how they apply to queues and
exchanges; imports `queues`, `exchanges` and `model`."""
