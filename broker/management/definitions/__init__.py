"""Definitions import and export (`rabbitmqctl export_definitions`, `/api/definitions`)."""
