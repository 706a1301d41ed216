"""Type stubs of the compiled ``segment_lib._speedups`` (see ``_speedups.c`` for the contracts)."""

from collections.abc import Callable

from segment_lib.records import BatchHeader, Record

#: the CRC-32C kernel ``scan_batches_v2`` uses on this CPU (``_crc32c.h``): "avx512-vpclmulqdq",
#: "sse4.2x3+pclmul", "sse4.2x3" or "table"
CRC32C_IMPL: str

def decode_records_v2(
    data: bytes | bytearray | memoryview,
    count: int,
    base_offset: int,
    first_timestamp: int,
    log_append_ts: int | None,
) -> list[Record]: ...
def emit_records_v2(
    data: bytes | bytearray | memoryview,
    count: int,
    first_timestamp: int,
    log_append_ts: int | None,
    fn: Callable[..., object],
    template: tuple[object, ...],
    slots: tuple[int, int, int, int, int],
    *,
    start: int = 0,
    marks: tuple[object, object, object] | None = None,
    zero_timestamps: bool = False,
) -> tuple[int, BaseException | None]: ...
def scan_batches_v2(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    verify_crc: bool,
    max_batches: int = -1,
) -> tuple[list[BatchHeader], int, str]: ...
def crc32c(data: bytes | bytearray | memoryview, value: int = 0, impl: str = "auto") -> int: ...
