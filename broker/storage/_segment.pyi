# The C record packer and writer (broker/storage/_segment.c); the behaviour is segment_format's
# record_lengths_py and write_records_py.
from typing import Final

from broker.storage.base import MessageRow

FIXED_FORMAT: Final[str]

def record_lengths(rows: list[MessageRow], /) -> list[int]: ...
def write_records(fd: int, parts: list[bytes | list[MessageRow]], sync: bool, /) -> int: ...
def crc32(data: bytes | bytearray | memoryview, value: int = 0, /) -> int: ...

CRC_CARRYLESS: int
