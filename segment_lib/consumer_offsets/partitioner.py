"""Which ``__consumer_offsets`` partition holds a group's records.

:func:`partition_for_group` is ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
with Java's UTF-16 ``String.hashCode`` (:func:`java_string_hashcode`) and Kafka's
``Utils.abs`` (``Integer.MIN_VALUE`` maps to 0). Pure functions of their arguments.
"""

from __future__ import annotations

import sys
from array import array
from typing import Final

__all__ = ["DEFAULT_NUM_PARTITIONS", "java_string_hashcode", "partition_for_group"]

#: Kafka's default ``offsets.topic.num.partitions``.
DEFAULT_NUM_PARTITIONS: Final = 50


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units
    (a non-BMP character counts as its surrogate pair), wrapped to a signed 32-bit int."""
    units = array("H", s.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def partition_for_group(group_id: str, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s records.

    ``Utils.abs(groupId.hashCode()) % num_partitions`` where Kafka's ``Utils.abs`` maps
    ``Integer.MIN_VALUE`` to 0 (not to itself as ``Math.abs`` does). That has been the
    definition since the topic's introduction in 0.8.2 (core's ``Utils.abs`` was fixed by
    KAFKA-1469 before that release; the clients' copy, which once masked with ``0x7fffffff``,
    was aligned by KAFKA-1988), in both the old and the new group coordinator.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, not {num_partitions}")
    h = java_string_hashcode(group_id)
    return (0 if h == -0x8000_0000 else abs(h)) % num_partitions
