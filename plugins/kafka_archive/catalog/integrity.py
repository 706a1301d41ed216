"""Whole-object integrity of archived segment objects, checked against their manifest.

The catalog build reads every archived ``.log`` object once. Besides every batch's own CRC
(checked by the scan), it checks the *whole object* against the checksum its manifest records,
because the 21 header bytes in front of a magic-2 batch's CRC-covered part (base offset, length,
partition leader epoch, magic, the CRC itself; 16 bytes of a magic 0/1 message) are covered by
no batch CRC: a flipped bit in a base offset would otherwise silently move records.

``verify`` (:data:`VERIFY_CHOICES`; the manifest records both checksums of every file):

* ``crc32c`` (default): the CRC-32C (Castagnoli) of the whole object, computed incrementally
  over the chunks as they are read (:class:`ObjectChecksum`), and every batch's CRC. Storage
  corruption is accidental, not adversarial: CRC-32C detects every error burst of up to 32
  bits and any other random corruption with probability 1 - 2^-32 per object, at ~27 GB/s.
* ``crc32c-only``: the whole-object CRC-32C alone. The batch CRCs are implied by it (the
  archiver checked every batch before upload, so bytes matching the manifest's CRC-32C have
  intact batch CRCs, up to 2^-32) and are computed only to locate a mismatch. Where the
  extractor's compiled summary runs (:mod:`kafka_archive.catalog.extract`), ``crc32c``
  reads every byte once as well (each batch's CRC is combined into the object's CRC-32C
  instead of a second pass), so this saves ~2% of a page-cached build; without it, the
  second CRC pass (~20%).
* ``sha256``: the SHA-256 of the whole object (~1.8 GB/s with SHA-NI, several times the cost
  of reading a page-cached object) and every batch's CRC: the behaviour before CRC-32C.

:func:`crc32c_update` uses the fastest CRC-32C available (see :func:`_pick_crc32c`: the
VPCLMULQDQ kernel of ``segment_lib/_crc32c.h`` where the CPU has AVX-512, ~58 GB/s, else the
``crc32c`` package's hardware code, ~27 GB/s) for the bytes the extractor's compiled summary does
not checksum itself.

When a CRC-32C mismatch is found and every batch passed its own checks, the difference must lie
in bytes no batch CRC covers (a CRC detects every error burst of up to 32 bits in what it
covers). :func:`locate_single_byte_error` then uses the linearity of the CRC to find which
single byte of those headers, if any, explains the difference (an object differing from the
archived one in exactly one byte is the common case of bit rot), so the error names a position.
The search is arithmetic on 32-bit values over the header bytes only and runs on the error
path only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import crc32c as _crc32c_pkg

from kafka_archive.store import IntegrityError

__all__ = [
    "ALGORITHMS",
    "CRC32C_SOURCE",
    "DEFAULT_VERIFY",
    "VERIFY_CHOICES",
    "ObjectChecksum",
    "ObjectIntegrityError",
    "crc32c_update",
    "locate_single_byte_error",
    "verify_mode",
]

#: the ``verify`` settings (see the module docstring)
VERIFY_CHOICES: Final = ("crc32c", "crc32c-only", "sha256")
DEFAULT_VERIFY: Final = "crc32c"
#: whole-object checksum algorithms (the manifest records both)
ALGORITHMS: Final = ("crc32c", "sha256")

_Crc = Callable[[Any, int], int]


def _pick_crc32c() -> tuple[_Crc, str]:
    """The fastest CRC-32C available.

    Measured on the benchmark machine (Zen 4, 8 MiB buffers in cache): ``segment_lib``'s
    VPCLMULQDQ folding kernel (CPUs with AVX-512) ~58 GB/s, the ``crc32c`` package 2.9 ~27 GB/s,
    ``segment_lib``'s three interleaved ``crc32`` streams ~22 GB/s, any table code ~2.5 GB/s.
    So: the folding kernel where the CPU has it, else the package on hardware instructions, else
    the extension's ``crc32`` streams, else the package's software code (faster than our table).
    """
    ext: _Crc | None
    try:
        from segment_lib._speedups import CRC32C_IMPL
        from segment_lib._speedups import crc32c as ext
    except ImportError:  # pragma: no cover - depends on the build
        CRC32C_IMPL, ext = "missing", None
    if ext is not None and CRC32C_IMPL == "avx512-vpclmulqdq":  # pragma: no cover - CPU
        return ext, f"segment_lib._speedups ({CRC32C_IMPL})"
    if getattr(_crc32c_pkg, "hardware_based", False):  # pragma: no cover - CPU
        return _crc32c_pkg.crc32c, "crc32c package (hardware)"
    if ext is not None and CRC32C_IMPL != "table":  # pragma: no cover - CPU
        return ext, f"segment_lib._speedups ({CRC32C_IMPL})"
    return _crc32c_pkg.crc32c, "crc32c package (software)"  # pragma: no cover - CPU


#: ``crc32c_update(data, value)``: CRC-32C of ``data`` continuing from ``value`` (0 to start)
crc32c_update: _Crc
#: which implementation :func:`crc32c_update` is (for benchmark records)
CRC32C_SOURCE: str
crc32c_update, CRC32C_SOURCE = _pick_crc32c()


def verify_mode(verify: str) -> tuple[str, bool]:
    """``verify`` -> (whole-object algorithm, whether every batch CRC is checked as well)."""
    if verify not in VERIFY_CHOICES:
        raise ValueError(f"verify must be one of {VERIFY_CHOICES}, not {verify!r}")
    return ("sha256", True) if verify == "sha256" else ("crc32c", verify == "crc32c")


class ObjectIntegrityError(IntegrityError):
    """An archived object's bytes differ from what its manifest recorded.

    Attributes (besides ``uri`` and ``key``):
        algorithm: ``crc32c`` or ``sha256``.
        expected / computed: the manifest's checksum and the one of the bytes read (hex).
        position: byte position in the object where the difference is, when it could be
            located (a batch that failed its own CRC or framing, or the single header byte
            that explains a CRC-32C difference); ``None`` when it could not be.
        size: the object's size (the checksum covers bytes ``[0, size)``).
        cause: the batch-level error found in the same bytes, if any (as a dict).
    """

    def __init__(
        self,
        message: str,
        *,
        uri: str | None,
        key: str,
        algorithm: str,
        expected: str,
        computed: str,
        size: int,
        position: int | None = None,
        cause: dict[str, Any] | None = None,
    ) -> None:
        self.algorithm = algorithm
        self.expected = expected
        self.computed = computed
        self.size = size
        self.position = position
        self.cause = cause
        super().__init__(message, uri=uri, key=key)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(
            algorithm=self.algorithm,
            expected=self.expected,
            computed=self.computed,
            size=self.size,
            position=self.position,
            cause=self.cause,
        )
        return out


class ObjectChecksum:
    """The whole-object checksum of ``algorithm``, fed chunk by chunk in order."""

    __slots__ = ("_crc", "_sha", "algorithm")

    def __init__(self, algorithm: str) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
        self.algorithm = algorithm
        self._crc = 0
        self._sha = hashlib.sha256() if algorithm == "sha256" else None

    def update(self, chunk: bytes | memoryview) -> None:
        if self._sha is not None:
            self._sha.update(chunk)
        else:
            self._crc = crc32c_update(chunk, self._crc)

    @property
    def crc(self) -> int:
        """The CRC-32C so far (``crc32c`` only).

        Settable, for a reader that continues the CRC-32C over the next bytes itself instead
        of passing them to :meth:`update` (the extractor's compiled summary computes it in the
        same pass as the batch CRCs: see :mod:`kafka_archive.catalog.extract`)."""
        return self._crc

    @crc.setter
    def crc(self, value: int) -> None:
        if self._sha is not None:
            raise ValueError("a SHA-256 checksum has no CRC-32C to continue")
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"a CRC-32C is a 32-bit value, not {value!r}")
        self._crc = value

    def hexdigest(self) -> str:
        """In the manifest's notation: 8 lowercase hex digits, or 64 for SHA-256."""
        if self._sha is not None:
            return self._sha.hexdigest()
        return f"{self._crc:08x}"


# ---------------------------------------------------------------------------------------------
# locating a single-byte difference from a CRC-32C syndrome
#
# CRC-32C is affine: for two messages A and B of the same length, crc(A) ^ crc(B) = raw(A ^ B),
# where raw is the table-driven register update started at 0 without the final xor. For a
# difference of one byte v at position p of an n-byte object, raw = Z^k(T[v]) with k = n-1-p,
# T the byte table and Z(r) = T[r & 0xff] ^ (r >> 8) the update by one zero byte. Z is
# invertible (the top bytes of the 256 table entries are all different), so p and v are found
# by stepping Z^-1 back from the syndrome and checking whether the register is a table entry.
# Long steps use precomputed powers of Z^-1 as 32x32 bit matrices.

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_MASK = 0xFFFFFFFF


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE: Final = _make_table()
#: top byte of a table entry -> its index (a bijection for this polynomial)
_TOP: Final = {t >> 24: i for i, t in enumerate(_TABLE)}
#: table entry -> the byte value it belongs to
_ENTRY: Final = {t: i for i, t in enumerate(_TABLE)}
assert len(_TOP) == 256 and len(_ENTRY) == 256


def _unstep(r: int) -> int:
    """Z^-1: the register before one zero byte produced ``r``."""
    i = _TOP[r >> 24]
    return (((r ^ _TABLE[i]) << 8) | i) & _MASK


def _apply(cols: Sequence[int], r: int) -> int:
    acc = 0
    j = 0
    while r:
        if r & 1:
            acc ^= cols[j]
        r >>= 1
        j += 1
    return acc


_POWERS: list[list[int]] = []  # _POWERS[j]: columns of Z^-(2^j)


def _power(j: int) -> list[int]:
    while len(_POWERS) <= j:
        if not _POWERS:
            _POWERS.append([_unstep(1 << b) for b in range(32)])
        else:
            prev = _POWERS[-1]
            _POWERS.append([_apply(prev, c) for c in prev])
    return _POWERS[j]


def _unstep_many(r: int, steps: int) -> int:
    if steps < 64:
        for _ in range(steps):
            r = _unstep(r)
        return r
    j = 0
    while steps:
        if steps & 1:
            r = _apply(_power(j), r)
        steps >>= 1
        j += 1
    return r


def locate_single_byte_error(
    syndrome: int, size: int, candidates: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Every ``(position, xor)`` such that flipping the bits ``xor`` of the byte at
    ``position`` explains a CRC-32C difference ``syndrome`` (computed ^ expected) of a
    ``size``-byte object, with ``position`` inside one of the ``candidates`` ranges
    ``[start, end)``. Pure; ascending positions. For single-bit differences in objects up to
    256 MiB the answer is unique (CRC-32C's Hamming distance is >= 4 up to 2^31 bits); for
    multi-bit single-byte differences a spurious extra match has a probability of about
    255 / 2^32 per candidate byte."""
    if not syndrome:
        return []
    positions = sorted(
        {p for a, b in candidates for p in range(max(0, a), min(b, size))}, reverse=True
    )
    found = []
    reg = syndrome  # = raw difference seen from position size-1 (k = 0)
    k = 0
    for p in positions:
        want = size - 1 - p
        reg = _unstep_many(reg, want - k)
        k = want
        v = _ENTRY.get(reg)
        if v is not None and v != 0:
            found.append((p, v))
    found.reverse()
    return found
