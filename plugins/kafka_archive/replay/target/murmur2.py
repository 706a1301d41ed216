"""Kafka's default key partitioner: ``Utils.murmur2`` + ``Utils.toPositive`` modulo partitions.

This is the function the Java producer's ``BuiltInPartitioner.partitionForKey`` applies to the
serialized key (``toPositive(murmur2(keyBytes)) % numPartitions``), so a replay with
``--partition-mapping murmur2`` puts every keyed record where a Java producer would.

``murmur2`` is the 32-bit MurmurHash2 with Kafka's seed ``0x9747b28c`` and mixing constants
``m = 0x5bd1e995``, ``r = 24``, reading the data as little-endian 32-bit words and folding the
1-3 trailing bytes as the Java ``switch`` fall-through does. Java ints are signed 32-bit with
wrap-around and ``>>>`` is the unsigned shift: everything below is computed on unsigned 32-bit
values and converted to a signed int at the end. ``toPositive`` is ``n & 0x7fffffff`` (not
``abs``: ``abs(Integer.MIN_VALUE)`` stays negative in Java).
"""

from __future__ import annotations

import struct

__all__ = ["murmur2", "murmur2_partition", "to_positive"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2(byte[])``: a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for (k,) in struct.iter_unpack("<I", data[: n4 * 4]):
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length & 3
    base = n4 * 4
    # Java: switch (length % 4) { case 3: h ^= (data[base+2] & 0xff) << 16; case 2: ...
    # case 1: h ^= data[base] & 0xff; h *= m; }  (fall-through)
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit of a 32-bit int."""
    return n & 0x7FFFFFFF


def murmur2_partition(key: bytes, num_partitions: int) -> int:
    """The partition the Java producer's default partitioner picks for a non-null ``key``."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return to_positive(murmur2(key)) % num_partitions
