"""Kafka protocol types for ``__consumer_offsets`` keys and values: a reader and a writer.

Private to :mod:`segment_lib.consumer_offsets`. Contract:

* :class:`Reader` is a cursor over one key or value buffer reading classic types (int16 length
  strings, int32 length bytes and arrays) and flexible ones (KIP-482 compact lengths, unsigned
  varints, tagged-field sections). Every malformed input (truncation, a negative or oversized
  length, a null where none is allowed, invalid UTF-8, an over-long varint, bytes left after
  the last field) raises :class:`~segment_lib.errors.CorruptRecordError` naming the field,
  with ``position`` the byte offset inside that buffer; nothing else escapes.
* :class:`Writer` accumulates the same types; a value that does not fit its type raises
  ``ValueError`` naming the field. Tagged fields are written in ascending tag order.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any, Final, TypeAlias

from segment_lib.errors import CorruptRecordError

__all__ = [
    "F64",
    "I8",
    "I16",
    "I32",
    "I64",
    "PRIMITIVE_READ",
    "U16",
    "RawTags",
    "Reader",
    "Writer",
    "check_raw_tags",
    "raw_tags",
]

_MAX_STRING_BYTES: Final = 0x7FFF  # Kafka refuses longer strings (int16 length, also compact)

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
F64 = struct.Struct(">d")

RawTags: TypeAlias = tuple[tuple[int, bytes], ...]


#: Kafka's fixed-size primitive types -> the :class:`Reader` method that reads one
PRIMITIVE_READ: Final[Mapping[str, str]] = {
    "int8": "i8",
    "int16": "i16",
    "uint16": "u16",
    "int32": "i32",
    "int64": "i64",
    "float64": "f64",
    "bool": "boolean",
    "uuid": "uuid",
}


class Reader:
    """Cursor over one key or value buffer; every error names ``what`` and the position."""

    __slots__ = ("_buf", "_end", "_what", "pos")

    def __init__(self, buf: bytes, what: str, start: int = 0, end: int | None = None) -> None:
        self._buf = buf
        self._what = what
        self.pos = start
        self._end = len(buf) if end is None else end

    def fail(self, detail: str, expected: str, position: int | None = None) -> CorruptRecordError:
        return CorruptRecordError(
            f"{self._what}: {detail}",
            position=self.pos if position is None else position,
            expected=expected,
        )

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def _take(self, n: int, name: str, kind: str) -> int:
        start = self.pos
        if n > self._end - start:
            raise self.fail(
                f"{name} truncated: needs {n} bytes, {self._end - start} left",
                f"{n} bytes of {kind} {name}",
            )
        self.pos = start + n
        return start

    def i8(self, name: str) -> int:
        return int(I8.unpack_from(self._buf, self._take(1, name, "int8"))[0])

    def i16(self, name: str) -> int:
        return int(I16.unpack_from(self._buf, self._take(2, name, "int16"))[0])

    def u16(self, name: str) -> int:
        return int(U16.unpack_from(self._buf, self._take(2, name, "uint16"))[0])

    def i32(self, name: str) -> int:
        return int(I32.unpack_from(self._buf, self._take(4, name, "int32"))[0])

    def i64(self, name: str) -> int:
        return int(I64.unpack_from(self._buf, self._take(8, name, "int64"))[0])

    def f64(self, name: str) -> float:
        return float(F64.unpack_from(self._buf, self._take(8, name, "float64"))[0])

    def boolean(self, name: str) -> bool:
        return self._buf[self._take(1, name, "bool")] != 0

    def uuid(self, name: str) -> uuid.UUID:
        start = self._take(16, name, "uuid")
        return uuid.UUID(bytes=self._buf[start : start + 16])

    def raw(self, n: int, name: str) -> bytes:
        start = self._take(n, name, "bytes")
        return self._buf[start : start + n]

    def uvarint(self, name: str) -> int:
        """Unsigned varint of at most 5 bytes holding a value below 2**32 (Kafka's
        ``readUnsignedVarint`` rejects a 5th byte with the continuation bit)."""
        start = self.pos
        value = 0
        shift = 0
        while True:
            if self.pos >= self._end:
                raise self.fail(
                    f"{name} truncated inside an unsigned varint",
                    f"unsigned varint {name}",
                    start,
                )
            b = self._buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise self.fail(
                    f"unsigned varint {name} is longer than 5 bytes",
                    f"unsigned varint {name} of at most 5 bytes",
                    start,
                )
        if value > 0xFFFFFFFF:
            raise self.fail(
                f"unsigned varint {name} exceeds 32 bits",
                f"unsigned varint {name} below 2**32",
                start,
            )
        return value

    def _length(self, name: str, kind: str, nullable: bool, compact: bool, wide: bool) -> int:
        """A length prefix: int16 (strings) / int32 (bytes, arrays), or compact uvarint N+1.
        Returns -1 for null (only when nullable)."""
        start = self.pos
        if compact:
            n = self.uvarint(f"length of {name}") - 1
            form = "compact length (N+1, 0 = null)"
        elif wide:
            n = self.i32(f"length of {name}")
            form = "int32 length (-1 = null)"
        else:
            n = self.i16(f"length of {name}")
            form = "int16 length (-1 = null)"
        if n == -1:
            if not nullable:
                raise self.fail(
                    f"non-nullable {kind} {name} is null",
                    f"{form} >= 0 of {kind} {name}",
                    start,
                )
            return -1
        if n < -1:
            raise self.fail(f"{kind} {name} has negative length {n}", f"{form}", start)
        return n

    def string(self, name: str, *, nullable: bool = False, compact: bool = False) -> str | None:
        start = self.pos
        n = self._length(name, "string", nullable, compact, wide=False)
        if n < 0:
            return None
        if n > _MAX_STRING_BYTES:
            raise self.fail(
                f"string {name} has length {n} > {_MAX_STRING_BYTES}",
                f"string length <= {_MAX_STRING_BYTES}",
                start,
            )
        data_start = self._take(n, name, "string")
        try:
            return self._buf[data_start : data_start + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(
                f"string {name} is not valid UTF-8 ({exc.reason})",
                f"UTF-8 text of string {name}",
                data_start + exc.start,
            ) from None

    def text(self, name: str, *, compact: bool = False) -> str:
        """A non-nullable string."""
        value = self.string(name, nullable=False, compact=compact)
        assert value is not None  # non-nullable strings never come back None
        return value

    def blob(self, name: str, *, nullable: bool = False, compact: bool = False) -> bytes | None:
        n = self._length(name, "bytes", nullable, compact, wide=True)
        if n < 0:
            return None
        start = self._take(n, name, "bytes")
        return self._buf[start : start + n]

    def array_len(self, name: str, *, nullable: bool = False, compact: bool = False) -> int:
        """Element count of an array; -1 for null. Like Kafka, a count larger than the bytes
        left is refused before anything is allocated."""
        start = self.pos
        n = self._length(name, "array", nullable, compact, wide=True)
        if n > self.remaining:
            raise self.fail(
                f"array {name} claims {n} elements but only {self.remaining} bytes are left",
                f"element count of array {name} <= bytes left",
                start,
            )
        return n

    def tagged_fields(self, name: str) -> list[tuple[int, int, int]]:
        """The tagged-fields section: ``(tag, start, size)`` per field, the data skipped."""
        count = self.uvarint(f"tagged field count of {name}")
        out: list[tuple[int, int, int]] = []
        for _ in range(count):
            tag = self.uvarint(f"tag in {name}")
            size = self.uvarint(f"size of tag {tag} in {name}")
            start = self._take(size, f"tag {tag} of {name}", "tagged field")
            out.append((tag, start, size))
        return out

    def sub(self, start: int, size: int) -> Reader:
        """A reader over ``size`` bytes at ``start`` (positions stay buffer positions)."""
        return Reader(self._buf, self._what, start, start + size)

    def done(self, name: str) -> None:
        if self.pos != self._end:
            raise self.fail(
                f"{self._end - self.pos} unexpected bytes after the last field of {name}",
                f"end of {name}",
            )


def raw_tags(r: Reader, found: list[tuple[int, int, int]], known: Iterable[int] = ()) -> RawTags:
    skip = set(known)
    return tuple(
        (tag, r.sub(start, size).raw(size, f"tag {tag}"))
        for tag, start, size in found
        if tag not in skip
    )


class Writer:
    """Accumulates Kafka protocol types; bad values raise ``ValueError`` naming the field."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def _pack(self, st: struct.Struct, value: Any, name: str) -> None:
        try:
            self.buf += st.pack(value)
        except struct.error as exc:
            raise ValueError(f"{name}={value!r} does not fit its type: {exc}") from None

    def i8(self, v: int, name: str) -> None:
        self._pack(I8, v, name)

    def i16(self, v: int, name: str) -> None:
        self._pack(I16, v, name)

    def u16(self, v: int, name: str) -> None:
        self._pack(U16, v, name)

    def i32(self, v: int, name: str) -> None:
        self._pack(I32, v, name)

    def i64(self, v: int, name: str) -> None:
        self._pack(I64, v, name)

    def f64(self, v: float, name: str) -> None:
        self._pack(F64, v, name)

    def boolean(self, v: bool, name: str) -> None:
        self.buf.append(1 if v else 0)

    def uuid(self, v: uuid.UUID, name: str) -> None:
        if not isinstance(v, uuid.UUID):
            raise ValueError(f"{name} must be a uuid.UUID, not {type(v).__name__}")
        self.buf += v.bytes

    def uvarint(self, v: int) -> None:
        if not 0 <= v <= 0xFFFFFFFF:
            raise ValueError(f"unsigned varint out of range: {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def _length(self, n: int, compact: bool, wide: bool) -> None:
        if compact:
            self.uvarint(n + 1)
        elif wide:
            self.buf += I32.pack(n)
        else:
            self.buf += I16.pack(n)

    def string(
        self, v: str | None, name: str, *, nullable: bool = False, compact: bool = False
    ) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            self._length(-1, compact, wide=False)
            return
        if not isinstance(v, str):
            raise ValueError(f"{name} must be a str, not {type(v).__name__}")
        data = v.encode("utf-8")
        if len(data) > _MAX_STRING_BYTES:
            raise ValueError(f"{name} is {len(data)} bytes of UTF-8; Kafka allows at most 32767")
        self._length(len(data), compact, wide=False)
        self.buf += data

    def blob(
        self, v: bytes | None, name: str, *, nullable: bool = False, compact: bool = False
    ) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            self._length(-1, compact, wide=True)
            return
        if not isinstance(v, bytes | bytearray | memoryview):
            raise ValueError(f"{name} must be bytes, not {type(v).__name__}")
        self._length(len(v), compact, wide=True)
        self.buf += v

    def array_len(self, n: int | None, compact: bool) -> None:
        self._length(-1 if n is None else n, compact, wide=True)

    def tagged_fields(self, fields: Iterable[tuple[int, bytes]]) -> None:
        """Write a tagged-fields section in ascending tag order (as Kafka does)."""
        ordered = sorted(fields, key=lambda tf: tf[0])
        for (a, _), (b, _) in pairwise(ordered):
            if a == b:
                raise ValueError(f"tagged field {a} given twice")
        self.uvarint(len(ordered))
        for tag, data in ordered:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data

    def getvalue(self) -> bytes:
        return bytes(self.buf)


def check_raw_tags(tags: RawTags, flexible: bool, name: str) -> None:
    if tags and not flexible:
        raise ValueError(f"{name}: tagged fields need a flexible version")
