# The C record packer (broker/storage/_segment.c); the behaviour is segment_format.pack_messages_py's.
from typing import Final

from broker.storage.base import MessageRow

FIXED_FORMAT: Final[str]

def pack_messages(rows: list[MessageRow], /) -> tuple[bytes, list[int]]: ...
