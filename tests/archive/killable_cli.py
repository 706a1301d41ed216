"""``kafka-archive archive`` with a hook that freezes the process at a chosen moment.

Used by the kill -9 tests: the test starts this script as a subprocess, waits for the marker
file the hook writes when it freezes, and kills the process with SIGKILL right there. Nothing
is changed in the archiver itself; the hook wraps the store the CLI opens.

Environment:
    KA_FREEZE_MARKER: file written (then the process sleeps forever) when the hook fires.
    KA_FREEZE_AFTER_UPLOADS=N: fire after the N-th object was created in the store.
    KA_FREEZE_ON_PART=N: fire when the N-th S3 UploadPart request is about to be sent (the
        process dies in the middle of a multipart upload).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import kafka_archive.store as store_package

# the archive command imports open_store from kafka_archive.store when it runs
_real_open_store = store_package.open_store
_lock = threading.Lock()


def _freeze() -> None:
    Path(os.environ["KA_FREEZE_MARKER"]).write_text(str(os.getpid()))
    while True:  # until SIGKILL
        time.sleep(60)


def _open_store(uri: str, **options: Any) -> Any:
    store: Any = _real_open_store(uri, **options)
    after = int(os.environ.get("KA_FREEZE_AFTER_UPLOADS", "0"))
    on_part = int(os.environ.get("KA_FREEZE_ON_PART", "0"))
    if after:
        inner = store.put_if_absent
        created = [0]

        def put_if_absent(key: str, source: Any, **kw: Any) -> Any:
            obj, made = inner(key, source, **kw)
            if made:
                with _lock:
                    created[0] += 1
                    fire = created[0] >= after
                if fire:
                    _freeze()
            return obj, made

        store.put_if_absent = put_if_absent  # type: ignore[method-assign]
    if on_part:
        parts = [0]

        def before_part(**_: Any) -> None:
            with _lock:
                parts[0] += 1
                fire = parts[0] >= on_part
            if fire:
                _freeze()

        events = store.client.meta.events  # an S3Store: the test passes an s3:// URI
        events.register("before-call.s3.UploadPart", before_part)
    return store


store_package.open_store = _open_store

if __name__ == "__main__":
    from kafka_archive.cli import main

    sys.argv = ["kafka-archive", *sys.argv[1:]]
    main()
