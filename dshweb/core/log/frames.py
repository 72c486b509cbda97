"""Incremental reading of DSH session logs: complete zstd frames only.

A compressed log is a chain of independent zstd frames (RFC 8878), each holding whole
newline-terminated JSON lines. :func:`frame_spans` finds where each frame ends from its
header and its block headers, without decoding it: a torn last frame is "not yet", never
an error, and is not decoded until all of it is on disk. :func:`frame_text` is the one
place a frame is decoded; it hands the text over in pieces of at most :data:`OUT_SIZE`
bytes, so a reader need never hold a frame expanded whole (a migration frame is a whole
log; a bomb is a few hundred kilobytes that would expand to gigabytes).

Why the frame scan is written here rather than left to ``zstandard``: the library says
where a frame ends only by decoding it (``decompressobj().eof`` and ``.unused_data``),
and ``decompressobj().decompress()`` returns everything its input expands to, with no
bound. Finding a frame's end that way would decode a torn frame again at every look and
could not hand its lines on before its end was seen (a large frame held decoded whole,
or decoded twice), and one call on a bomb would expand all of it. The bounded reader
(``stream_reader().read(n)``) does not say how much input it used, so it cannot find the
end of a frame among the frames that follow. Nor does the library expose libzstd's
``ZSTD_findFrameCompressedSize``. What the library does do is used: the header's length
(:func:`zstandard.frame_header_size`), the magic number, and every byte of decoding and
checksum checking.

``split_frames`` is a pure function over a byte buffer that starts at a known file
offset; the caller keeps the offset of the first byte not yet consumed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import zstandard

from dshweb.core.errors import LogError
from dshweb.core.said import say

ZSTD_MAGIC = zstandard.FRAME_HEADER
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_BLOCK_RESERVED = 3
OUT_SIZE = 1 << 20
"""Decoded bytes handed over at a time: a frame bounded by its block count to at most
this much (nearly every frame DSH writes: one append batch) is decoded in one call, a
larger one a piece at a time (streaming every frame made the whole fold ~3% slower)."""

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
    """Decoded text of one complete frame and where it sits in the file."""

    offset: int
    end: int
    text: bytes


def frame_length(
    buf: bytes | bytearray | memoryview, pos: int, file_offset: int
) -> tuple[int, int] | None:
    """Length and block count of the zstd frame starting at ``pos``, or None when it is
    not complete yet (a skippable frame counts no blocks); a bad frame header raises
    :class:`LogError`. Looks at that frame's headers only: a reader that may stop after
    a frame (a budget) finds the frames one at a time, not all of a buffer at once."""
    avail = len(buf) - pos
    if avail < 4:
        if bytes(buf[pos : pos + avail]) != ZSTD_MAGIC[:avail]:
            raise LogError(say("frame-bad-magic"), offset=file_offset + pos)
        return None
    magic = bytes(buf[pos : pos + 4])
    if magic != ZSTD_MAGIC:
        if int.from_bytes(magic, "little") & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            if avail < 8:
                return None
            size = 8 + int.from_bytes(buf[pos + 4 : pos + 8], "little")
            return (size, 0) if size <= avail else None
        raise LogError(say("frame-bad-magic"), offset=file_offset + pos)
    if avail < 5:
        return None
    descriptor = buf[pos + 4]
    if descriptor & 0x08:
        raise LogError(say("frame-reserved-bit"), offset=file_offset + pos)
    at = pos + zstandard.frame_header_size(buf[pos : pos + 5])
    blocks = 0
    while True:  # each block: 3 header bytes (last flag, type, size), then its content
        if len(buf) < at + 3:
            return None
        block = buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)
        kind = (block >> 1) & 0x03
        if kind == _BLOCK_RESERVED:
            raise LogError(say("frame-reserved-block"), offset=file_offset + pos)
        at += 3 + (1 if kind == 1 else block >> 3)  # an RLE block holds one byte
        blocks += 1
        if block & 0x01:
            break
    if descriptor & 0x04:  # the content checksum
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
                found = frame_length(view, pos, file_offset)
            except LogError as error:
                error.__traceback__ = None
                return spans, error
            if found is None:
                break
            length, blocks = found
            spans.append((pos, pos + length, blocks))
            pos += length
    return spans, None


def frame_text(frame: bytes | bytearray, blocks: int) -> bytes | Iterator[bytes]:
    """The decoded text of one complete zstd frame of ``blocks`` blocks (a span of
    :func:`frame_spans`): the text itself when the block count bounds it to
    :data:`OUT_SIZE` (decoded in one call), else an iterator of pieces of at most
    :data:`OUT_SIZE` bytes, decoded as they are taken. A corrupt frame raises
    :class:`zstandard.ZstdError`; a large one may have handed over its first pieces by
    then."""
    if blocks * zstandard.BLOCKSIZE_MAX <= OUT_SIZE:
        return decompressor().decompressobj().decompress(frame)
    # A decompressor of its own: the pieces may be taken over several reads (a budget),
    # while this thread's decompressor decodes other frames.
    return iter(partial(zstandard.ZstdDecompressor().stream_reader(frame).read, OUT_SIZE), b"")


def split_frames(buf: bytes, file_offset: int) -> tuple[list[Chunk], LogError | None]:
    """Decode every complete frame in ``buf`` (which starts at ``file_offset``).

    Returns the decoded chunks in order and, if a frame is corrupt, the error for it:
    the chunks before it are still returned, nothing after it is read.
    """
    chunks: list[Chunk] = []
    spans, error = frame_spans(buf, file_offset)
    for start, end, blocks in spans:
        if buf[start : start + 4] != ZSTD_MAGIC:
            continue  # a skippable frame
        try:
            text = frame_text(buf[start:end], blocks)
            if not isinstance(text, bytes):
                text = b"".join(text)
        except zstandard.ZstdError as bad:
            return chunks, LogError(say("frame-corrupt", detail=bad), offset=file_offset + start)
        chunks.append(Chunk(file_offset + start, file_offset + end, text))
    return chunks, error
