"""Type stubs of the compiled ``segment_lib._columns`` (see ``_columns.c`` for the contract)."""

class ColumnBuffers:
    #: records held
    rows: int
    #: bytes used by all buffers
    nbytes: int
    #: ``(min, max)`` of ``timestamp // 3600000`` over the rows (-1: no timestamp); None: empty
    hours: tuple[int, int] | None

    def __init__(self) -> None: ...
    def append_v2(
        self,
        data: bytes | bytearray | memoryview,
        count: int,
        base_offset: int,
        first_timestamp: int,
        log_append_ts: int | None,
        timestamp_type: int,
        leader_epoch: int,
        producer_id: int,
        /,
    ) -> int: ...
    def take(self) -> dict[str, memoryview | int]: ...
