"""mypyc's class attributes without a runtime dependency.

``mypyc_attr`` marks compiled classes that interpreted ones subclass (Message, Envelope). mypyc reads it at
compile time by its full name, ``mypy_extensions.mypyc_attr``; at run time it does nothing. The domain core
imports nothing outside the standard library (the analytics executors load it from a zip, without
site-packages), so without mypy_extensions the decorator is the identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # pure Python without mypy_extensions: nothing compiled reads the attributes

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[T], T]:
        return lambda cls: cls


__all__ = ["mypyc_attr"]
