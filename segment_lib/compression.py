"""Kafka's compression codecs, as brokers and Java producers actually write them.

Codec ids (attribute bits 0-2 of every batch/message): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

Quirks handled here, each of which real logs contain:

* **snappy** from Java producers is *xerial-framed* (``\\x82SNAPPY\\x00`` magic, two int32 version
  fields, then ``[int32 length][raw snappy block]`` chunks); librdkafka and others write raw
  snappy. Both are read; the framing is detected by its magic. No maintained library speaks the
  xerial framing, so that ~15-line loop is ours; the block codec is cramjam's.
* **lz4** for magic 0 used Kafka's broken frame descriptor checksum (KAFKA-3160): the HC byte was
  computed over the magic number too, so standard LZ4 frame decoders reject it. Legacy lz4
  payloads are therefore walked block by block (the frame layout is simple and fixed) and each
  block is decoded with the ``lz4`` package; magic 1 and 2 use standard frames via ``lz4.frame``.
* **zstd** frames written by the Java library may omit the content size, so a streaming
  decompressor is used.

Functions raise :class:`~segment_lib.errors.CompressionError` with the position of the compressed
payload (relative to the buffer the caller parses; file readers re-anchor it).
"""

from __future__ import annotations

import gzip
import struct
import threading
import zlib
from collections.abc import Callable
from enum import IntEnum

import cramjam
import lz4.block
import lz4.frame
import xxhash
import zstandard

from segment_lib.errors import CompressionError, UnsupportedFormatError

__all__ = ["Codec", "compress", "decompress"]


class Codec(IntEnum):
    """Compression codec id as stored in attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """Lower-case name as kafka-dump-log.sh prints it (``none``, ``gzip``...)."""
        return self.name.lower()


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
# xerial header: magic(8) version int32, compatible-version int32; then chunks [int32 len][block]
_XERIAL_HEADER = struct.Struct(">8sii")
_INT32 = struct.Struct(">i")
_LZ4_MAGIC = 0x184D2204
# LZ4 frame: magic uint32 LE, FLG byte, BD byte, [content size uint64 LE if FLG bit 3], HC byte
_LZ4_FRAME_START = struct.Struct("<IBB")
_LZ4_BLOCK_SIZE = struct.Struct("<I")
_LZ4_MAX_BLOCK = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
# python-zstandard: "ZstdDecompressor instances are not thread safe" (nor the decompressobj
# objects made from one, which share its context). Replay and the catalog decode on several
# threads at once, so each thread keeps a decompressor of its own: a shared one mixed two
# frames' state and produced garbage ("value length -49") on a byte-perfect object.
_ZSTD_LOCAL = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    d: zstandard.ZstdDecompressor | None = getattr(_ZSTD_LOCAL, "d", None)
    if d is None:
        d = _ZSTD_LOCAL.d = zstandard.ZstdDecompressor()
    return d


def _snappy_decompress(data: memoryview) -> bytes:
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER.size
    end = len(data)
    while pos < end:
        if pos + 4 > end:
            raise CompressionError(
                "xerial snappy chunk header cut short", position=pos, expected="int32 chunk length"
            )
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CompressionError(
                f"xerial snappy chunk of {length} bytes overruns the payload",
                position=pos - 4,
                expected=f"a chunk length of at most {end - pos}",
            )
        out += cramjam.snappy.decompress_raw(data[pos : pos + length])
        pos += length
    return bytes(out)


def _lz4_legacy_decompress(data: memoryview) -> bytes:
    """Walk an LZ4 frame without trusting its header checksum (Kafka magic-0 framing)."""
    if len(data) < _LZ4_FRAME_START.size + 1:
        raise CompressionError("lz4 frame header cut short", position=0, expected="7+ bytes")
    magic, flg, bd = _LZ4_FRAME_START.unpack_from(data, 0)
    if magic != _LZ4_MAGIC:
        raise CompressionError(
            f"lz4 frame magic {magic:#x}", position=0, expected=f"magic {_LZ4_MAGIC:#x}"
        )
    block_checksum = bool(flg & 0x10)
    content_size = bool(flg & 0x08)
    max_block = _LZ4_MAX_BLOCK.get((bd >> 4) & 0x7, 4 << 20)
    pos = _LZ4_FRAME_START.size + (8 if content_size else 0) + 1  # skip the (broken) HC byte
    out = bytearray()
    end = len(data)
    while True:
        if pos + 4 > end:
            raise CompressionError(
                "lz4 block header cut short", position=pos, expected="uint32 block size"
            )
        (size,) = _LZ4_BLOCK_SIZE.unpack_from(data, pos)
        pos += 4
        if size == 0:  # end mark (an optional content checksum may follow; not needed)
            return bytes(out)
        uncompressed = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        if pos + size > end:
            raise CompressionError(
                f"lz4 block of {size} bytes overruns the payload",
                position=pos - 4,
                expected=f"a block of at most {end - pos} bytes",
            )
        block = data[pos : pos + size]
        if uncompressed:
            out += block
        else:
            out += lz4.block.decompress(block, uncompressed_size=max_block)
        pos += size + (4 if block_checksum else 0)


def _zstd_decompress(data: memoryview) -> bytes:
    return bytes(_zstd_decompressor().decompressobj().decompress(data))


def _gzip_decompress(data: memoryview) -> bytes:
    # wbits 16+15: gzip container, as Java's GZIPOutputStream writes; several members allowed.
    out = bytearray()
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest)
        if not d.eof:
            raise zlib.error("gzip stream ends before its trailer")
        rest = d.unused_data
    return bytes(out)


_DECOMPRESSORS: dict[Codec, Callable[[memoryview], bytes]] = {
    Codec.GZIP: _gzip_decompress,
    Codec.SNAPPY: _snappy_decompress,
    Codec.LZ4: lambda data: lz4.frame.decompress(data),
    Codec.ZSTD: _zstd_decompress,
}


def decompress(codec: int, data: bytes | memoryview, *, legacy_lz4: bool = False) -> bytes:
    """Decompress a batch payload.

    Args:
        codec: the codec id from the batch attributes.
        data: the compressed bytes.
        legacy_lz4: True for magic-0 messages, whose lz4 frames carry Kafka's broken checksum.

    Raises:
        UnsupportedFormatError: codec id 5-7 (not defined by Kafka).
        CompressionError: the payload is not valid for the codec (position 0 = payload start).
    """
    view = memoryview(data)
    if codec == Codec.NONE:
        return bytes(view)
    try:
        kind = Codec(codec)
    except ValueError:
        raise UnsupportedFormatError(
            f"compression codec id {codec}", position=0, expected="codec id 0-4"
        ) from None
    try:
        if kind is Codec.LZ4 and legacy_lz4:
            return _lz4_legacy_decompress(view)
        return _DECOMPRESSORS[kind](view)
    except CompressionError:
        raise
    except Exception as exc:  # every codec library has its own exception types
        raise CompressionError(
            f"{kind.label} payload does not decompress: {exc}",
            position=0,
            expected=f"a valid {kind.label} stream",
        ) from exc


def _xerial_compress(data: bytes, block_size: int = 32 * 1024) -> bytes:
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for start in range(0, len(data), block_size):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + block_size]))
        out += _INT32.pack(len(block)) + block
    return bytes(out)


def _kafka_lz4_frame(data: bytes, *, legacy_checksum: bool) -> bytes:
    """An LZ4 frame as Kafka's ``KafkaLZ4BlockOutputStream`` writes it: 64 KiB independent
    blocks, no content size, no checksums (FLG 0x60, BD 0x40); for magic 0 the header checksum
    is computed over the magic number too (KAFKA-3160)."""
    frame = bytearray(
        lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            content_checksum=False,
            block_linked=False,
            store_size=False,
        )
    )
    if legacy_checksum:
        # frame: magic(4) FLG(1) BD(1) HC(1); broken HC = second byte of xxh32(magic..BD)
        frame[6] = (xxhash.xxh32_intdigest(bytes(frame[0:6])) >> 8) & 0xFF
    return bytes(frame)


def compress(
    codec: int,
    data: bytes,
    *,
    xerial: bool = True,
    legacy_lz4: bool = False,
    level: int | None = None,
) -> bytes:
    """Compress ``data`` as Kafka clients do (used by the test/demo writer).

    ``xerial`` selects Java-style framed snappy (the default, as the Java producer writes it);
    ``legacy_lz4`` writes magic-0's broken lz4 header checksum.
    """
    kind = Codec(codec)
    if kind is Codec.NONE:
        return bytes(data)
    if kind is Codec.GZIP:
        return gzip.compress(data, compresslevel=6 if level is None else level, mtime=0)
    if kind is Codec.SNAPPY:
        return _xerial_compress(data) if xerial else bytes(cramjam.snappy.compress_raw(data))
    if kind is Codec.LZ4:
        return _kafka_lz4_frame(data, legacy_checksum=legacy_lz4)
    return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
