"""Incremental reading of DSH session logs: complete zstd frames or complete lines only.

A compressed log is a chain of independent zstd frames (RFC 8878), each holding whole
newline-terminated JSON lines. Frame boundaries are found from the frame header and the
block headers, so a frame is decoded only once all of its bytes are on disk: a torn last
frame is "not yet", never an error. A plain ``.jsonl`` log is read by complete lines.

``split_frames`` is a pure function over a byte buffer that starts at a known file
offset; the caller keeps the offset of the first byte not yet consumed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import zstandard

from dshweb.core.errors import LogError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_FCS_SIZES = (0, 2, 4, 8)
_DID_SIZES = (0, 1, 2, 4)
_BLOCK_RESERVED = 3

_local = threading.local()


def decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: one must never be used by two threads at once."""
    try:
        return _local.decompressor  # type: ignore[no-any-return]
    except AttributeError:
        _local.decompressor = zstandard.ZstdDecompressor()
        return _local.decompressor  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Chunk:
    """Decoded text of one complete frame (or run of lines) and where it sits in the file."""

    offset: int
    end: int
    text: bytes


def _frame_length(
    buf: bytes | bytearray | memoryview, pos: int, file_offset: int
) -> tuple[int, int] | None:
    """Length and block count of the zstd frame starting at ``pos``, or None when it is
    not complete yet (a skippable frame counts no blocks)."""
    avail = len(buf) - pos
    if avail < 4:
        if bytes(buf[pos : pos + avail]) != ZSTD_MAGIC[:avail]:
            raise LogError("not a zstd frame (bad magic)", offset=file_offset + pos)
        return None
    magic = bytes(buf[pos : pos + 4])
    if magic != ZSTD_MAGIC:
        if int.from_bytes(magic, "little") & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            if avail < 8:
                return None
            size = 8 + int.from_bytes(buf[pos + 4 : pos + 8], "little")
            return (size, 0) if size <= avail else None
        raise LogError("not a zstd frame (bad magic)", offset=file_offset + pos)
    if avail < 5:
        return None
    fhd = buf[pos + 4]
    if fhd & 0x08:
        raise LogError("not a zstd frame (reserved header bit set)", offset=file_offset + pos)
    single_segment = fhd & 0x20
    fcs_flag = fhd >> 6
    fcs_size = 1 if fcs_flag == 0 and single_segment else _FCS_SIZES[fcs_flag]
    header = 5 + (0 if single_segment else 1) + _DID_SIZES[fhd & 0x03] + fcs_size
    at = pos + header
    blocks = 0
    while True:
        if len(buf) < at + 3:
            return None
        block = buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)
        kind = (block >> 1) & 0x03
        if kind == _BLOCK_RESERVED:
            raise LogError("corrupt zstd frame (reserved block type)", offset=file_offset + pos)
        at += 3 + (1 if kind == 1 else block >> 3)
        blocks += 1
        if block & 0x01:
            break
    if fhd & 0x04:
        at += 4
    return (at - pos, blocks) if at <= len(buf) else None


def frame_spans(
    buf: bytes | bytearray, file_offset: int
) -> tuple[list[tuple[int, int, int]], LogError | None]:
    """(start, end, blocks) of every complete frame at the start of ``buf``, without
    decoding, and the error that stopped the scan early (a bad frame header), if any.
    A frame of ``blocks`` blocks decodes to at most ``blocks`` × 128 KiB."""
    spans: list[tuple[int, int, int]] = []
    pos = 0
    with memoryview(buf) as view:  # released on return: the caller may resize ``buf``
        while pos < len(buf):
            try:
                found = _frame_length(view, pos, file_offset)
            except LogError as error:
                error.__traceback__ = None
                return spans, error
            if found is None:
                break
            length, blocks = found
            spans.append((pos, pos + length, blocks))
            pos += length
    return spans, None


def split_frames(buf: bytes, file_offset: int) -> tuple[list[Chunk], LogError | None]:
    """Decode every complete frame in ``buf`` (which starts at ``file_offset``).

    Returns the decoded chunks in order and, if a frame is corrupt, the error for it:
    the chunks before it are still returned, nothing after it is read.
    """
    chunks: list[Chunk] = []
    spans, error = frame_spans(buf, file_offset)
    for start, end, _blocks in spans:
        if buf[start : start + 4] != ZSTD_MAGIC:
            continue  # a skippable frame
        try:
            text = decompressor().decompressobj().decompress(buf[start:end])
        except zstandard.ZstdError as bad:
            return chunks, LogError(f"corrupt zstd frame ({bad})", offset=file_offset + start)
        chunks.append(Chunk(file_offset + start, file_offset + end, text))
    return chunks, error
