"""Pickles of the kinds a restricted unpickler of the core meets: enum members as some
Python 3.11 releases pickle them, and a forged ``getattr``."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import zstandard


def _by_name(member: enum.Enum, protocol: object = None) -> tuple[object, tuple[object, str]]:
    """``Enum.__reduce_ex__`` of Python 3.11.2 (Debian 12's): the member by name."""
    return getattr, (type(member), member.name)


@contextmanager
def enums_pickled_by_name(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within it, every enum member pickles as ``getattr(cls, name)``, as on Debian 12's
    Python 3.11.2 (later releases pickle it by value)."""
    with monkeypatch.context() as patched:
        patched.setattr(enum.Enum, "__reduce_ex__", _by_name)
        yield


def asks_getattr(body: bytes) -> bool:
    """Whether the compressed pickle ``body`` (a sealed blob's) calls ``getattr``."""
    return b"getattr" in zstandard.ZstdDecompressor().decompressobj().decompress(body)


class ForgedGetattr:
    """Pickles as ``getattr(cls, name)`` of an attribute that is no enum member."""

    def __init__(self, cls: type, name: str) -> None:
        self.cls, self.name = cls, name

    def __reduce__(self) -> tuple[object, tuple[object, str]]:
        return getattr, (self.cls, self.name)
