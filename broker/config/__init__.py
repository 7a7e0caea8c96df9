"""Server configuration as the rabbitmq image reads it: flags, WARRENMQ_* and RABBITMQ_* environment
variables, rabbitmq.conf (sysctl format) and enabled_plugins, in that order of precedence, over RabbitMQ's
defaults."""

from broker.config.args import (
    FRAME_MIN_SIZE,
    MAX_CHANNEL_MAX,
    add_journal_arguments,
    add_serve_arguments,
    config_from_args,
    journal_config_from_args,
    parse_user,
)
from broker.config.model import JournalConfig, ServerConfig, TLSOptions, Watermark

__all__ = [
    "FRAME_MIN_SIZE",
    "MAX_CHANNEL_MAX",
    "JournalConfig",
    "ServerConfig",
    "TLSOptions",
    "Watermark",
    "add_journal_arguments",
    "add_serve_arguments",
    "config_from_args",
    "journal_config_from_args",
    "parse_user",
]
