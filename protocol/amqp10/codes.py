"""The AMQP 1.0 format codes (part 1, 1.6: "Primitive Type Definitions"), one constant per encoding."""

from __future__ import annotations

from typing import Final

DESCRIBED: Final = 0x00
NULL: Final = 0x40
BOOLEAN: Final = 0x56
TRUE: Final = 0x41
FALSE: Final = 0x42
UBYTE: Final = 0x50
USHORT: Final = 0x60
UINT: Final = 0x70
SMALLUINT: Final = 0x52
UINT0: Final = 0x43
ULONG: Final = 0x80
SMALLULONG: Final = 0x53
ULONG0: Final = 0x44
BYTE: Final = 0x51
SHORT: Final = 0x61
INT: Final = 0x71
SMALLINT: Final = 0x54
LONG: Final = 0x81
SMALLLONG: Final = 0x55
FLOAT: Final = 0x72
DOUBLE: Final = 0x82
DECIMAL32: Final = 0x74
DECIMAL64: Final = 0x84
DECIMAL128: Final = 0x94
CHAR: Final = 0x73
TIMESTAMP: Final = 0x83
UUID: Final = 0x98
VBIN8: Final = 0xA0
VBIN32: Final = 0xB0
STR8: Final = 0xA1
STR32: Final = 0xB1
SYM8: Final = 0xA3
SYM32: Final = 0xB3
LIST0: Final = 0x45
LIST8: Final = 0xC0
LIST32: Final = 0xD0
MAP8: Final = 0xC1
MAP32: Final = 0xD1
ARRAY8: Final = 0xE0
ARRAY32: Final = 0xF0

# The constructor an array's elements get when we encode one: the widest encoding of their type, so that
# every element has the same width whatever its value (RabbitMQ 4's and Proton's choice).
ARRAY_ELEMENT_CODES: Final[dict[str, int]] = {
    "null": NULL,
    "boolean": BOOLEAN,
    "ubyte": UBYTE,
    "ushort": USHORT,
    "uint": UINT,
    "ulong": ULONG,
    "byte": BYTE,
    "short": SHORT,
    "int": INT,
    "long": LONG,
    "float": FLOAT,
    "double": DOUBLE,
    "decimal32": DECIMAL32,
    "decimal64": DECIMAL64,
    "decimal128": DECIMAL128,
    "char": CHAR,
    "timestamp": TIMESTAMP,
    "uuid": UUID,
    "binary": VBIN32,
    "string": STR32,
    "symbol": SYM32,
    "list": LIST32,
    "map": MAP32,
    "array": ARRAY32,
}
