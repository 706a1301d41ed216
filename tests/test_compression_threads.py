"""Codecs are safe to use from several threads at once (replay and the catalog decode on many).

Regression: one module-level ``zstandard.ZstdDecompressor`` was shared by every thread; the
library documents its decompressors as not thread-safe, and a multi-partition zstd replay against
a real broker failed with "zstd payload ... value length -49" on a byte-perfect object.
"""

from __future__ import annotations

import random
import threading

import pytest
import zstandard

from segment_lib.compression import Codec, compress, decompress


@pytest.mark.parametrize("codec", [Codec.ZSTD, Codec.LZ4, Codec.GZIP, Codec.SNAPPY])
def test_concurrent_decompression_is_exact(codec: Codec) -> None:
    rng = random.Random(int(codec))
    payloads = [rng.randbytes(2000) * 40 + bytes([i]) * 30_000 for i in range(8)]
    if codec is Codec.ZSTD:
        # Java's zstd-jni writes frames without a content size: the streaming path
        frames = [zstandard.ZstdCompressor(write_content_size=False).compress(p) for p in payloads]
    else:
        frames = [compress(codec, p) for p in payloads]
    failures: list[str] = []
    start = threading.Barrier(len(payloads))

    def work(i: int) -> None:
        start.wait()
        for _ in range(250):
            try:
                if decompress(codec, frames[i]) != payloads[i]:
                    failures.append(f"thread {i}: wrong bytes")
            except Exception as exc:  # every failure is collected and reported
                failures.append(f"thread {i}: {exc!r}"[:200])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(payloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
