"""A ``replay run`` through the replay service in a child process that kills itself (SIGKILL).

    python -m tests.support.replay_service_child STORE_URI DB_URL REQUEST_JSON \
        [--kill-at POINT --nth N]

REQUEST_JSON is a replay request as :func:`~kafka_archive.services.replay.spec_from_request`
takes it (``from`` as users write it, ``target`` the bootstrap servers), so the child plans and
runs exactly as ``kafka-archive replay run`` does: the request's intent is resolved, the
replay's object lease taken, the target checked, the replay run under its lease. POINT is an
engine hook point (see :mod:`tests.support.replay_child`); the process dies at its N-th
occurrence with no cleanup. Without ``--kill-at`` it prints the report as JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import threading
from typing import Any

from kafka_archive.catalog.db import open_catalog
from kafka_archive.replay.planning.plan import TargetSpec
from kafka_archive.services.replay import ReplayService, spec_from_request
from kafka_archive.settings import load_settings
from kafka_archive.store import open_store


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("db")
    p.add_argument("request")
    p.add_argument("--kill-at", default=None)
    p.add_argument("--nth", type=int, default=1)
    args = p.parse_args()
    request = json.loads(args.request)
    target = TargetSpec(bootstrap_servers=request.pop("target"))
    spec = spec_from_request(request, target)
    lock = threading.Lock()
    seen = [0]

    def hook(point: str, info: dict[str, Any]) -> None:
        if point != args.kill_at:
            return
        with lock:
            seen[0] += 1
            if seen[0] >= args.nth:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    if args.kill_at:
        # the service runs in-process through runner.execute (looked up at call time)
        from kafka_archive.replay import runner

        execute = runner.execute
        runner.execute = functools.partial(execute, hook=hook)  # type: ignore[assignment]
    with ReplayService(
        load_settings(env={}), catalog=open_catalog(args.db), store=open_store(args.store)
    ) as service:
        report = service.run(service.plan(spec))
    print(report.model_dump_json(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
