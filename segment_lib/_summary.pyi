"""Type stubs of the compiled ``segment_lib._summary`` (see ``_summary.c`` for the contract)."""

#: the CRC-32C kernel on this CPU (``_crc32c.h``): "avx512-vpclmulqdq", "sse4.2x3+pclmul",
#: "sse4.2x3" or "table"
CRC32C_IMPL: str
#: the state summarize_v2 starts from (18 ints: see _summary.c)
INITIAL_STATE: tuple[int, ...]
#: the epoch of "no leader-epoch run open yet" in the state
NO_EPOCH: int

def summarize_v2(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    base: int,
    verify_crc: bool,
    crc: int | None,
    state: tuple[int, ...],
    interval_bytes: int,
    histogram_ms: int,
    one_pass: bool = True,
    /,
) -> tuple[
    int,
    str,
    int | None,
    tuple[int, ...],
    list[tuple[int, ...]],
    list[tuple[int, ...]],
    list[tuple[int, ...]],
]: ...
def crc32c(data: bytes | bytearray | memoryview, value: int = 0, impl: str = "auto") -> int: ...
def crc32c_combine(crc_a: int, crc_b: int, len_b: int, impl: str = "auto") -> int: ...
