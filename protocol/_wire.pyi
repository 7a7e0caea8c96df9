from typing import Any, Final, TypeVar

_T = TypeVar("_T")

FRAME_PUBLISH: Final[int]
FRAME_ACK: Final[int]
FRAME_ACK_MULTIPLE: Final[int]

def scan(data: bytes, pos: int, limit: int, /) -> tuple[list[tuple[int, int, Any]], int]: ...
def encode_basic_deliver_content(
    channel: int,
    consumer_tag: str,
    delivery_tag: int,
    redelivered: bool,
    exchange: str,
    routing_key: str,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
    /,
) -> bytes: ...
def untrack(obj: _T, /) -> _T: ...
