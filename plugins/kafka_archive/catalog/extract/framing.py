"""The log format's framing, as the extractor and the error locator walk it.

Every batch (magic 2) or message (magic 0/1) starts with its offset (int64) and size (int32);
the byte ranges no batch CRC covers are where a difference in an object's bytes can hide from
the batch checks (:mod:`kafka_archive.catalog.extract.locate`).
"""

from __future__ import annotations

import struct

from segment_lib.record_batch import CRC_START
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET

__all__ = ["MIN_SIZE_FIELD", "OFFSET_SIZE", "UNCOVERED_LEGACY", "UNCOVERED_V2"]

# offset int64 + size int32 in front of every batch/message (LOG_OVERHEAD bytes)
OFFSET_SIZE = struct.Struct(">qi")
#: the smallest size field any magic can have (a magic 0 message header)
MIN_SIZE_FIELD = MAGIC_OFFSET + 1 - LOG_OVERHEAD
#: leading bytes of a batch that no batch CRC covers: magic 2 (offset, length, partition
#: leader epoch, magic, crc: the CRC starts at the attributes) and magic 0/1 (offset, size, crc:
#: the CRC starts at the magic byte)
UNCOVERED_V2 = CRC_START
UNCOVERED_LEGACY = MAGIC_OFFSET
