"""A replay run in a child process that kills itself (SIGKILL) at a chosen point.

    python -m tests.support.replay_child PLAN_JSON STORE_URI DB_URL [--kill-at POINT --nth N]

POINT is an engine hook point (``produced``, ``before_progress``, ``before_commit``,
``after_commit``, ``after_catalog``); the process dies at its N-th occurrence (any partition),
with no cleanup - the closest thing to a crashed executor. Without ``--kill-at`` the replay runs
to the end and prints its report as JSON. The progress topic is read with the marker-aware
reader (the mock's read_committed consumers also see aborted data: see kafka_mock.py), or with
``--reader kafka`` with the replay's own read_committed consumer (a real broker).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from kafka_archive.catalog.db import open_catalog
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.replay.runner import execute
from kafka_archive.store import open_store

from tests.support.kafka_mock import MarkerAwareReader


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("plan")
    p.add_argument("store")
    p.add_argument("db")
    p.add_argument("--kill-at", default=None)
    p.add_argument("--nth", type=int, default=1)
    p.add_argument("--parallelism", type=int, default=None)
    p.add_argument(
        "--reader",
        choices=["marker-aware", "kafka"],
        default="marker-aware",
        help="how to read the progress topic: the mock needs the marker-aware reader; a real "
        "broker is read with the replay's own read_committed consumer",
    )
    args = p.parse_args()
    with open(args.plan, encoding="utf-8") as f:
        plan = ReplayPlan.from_json(f.read())
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

    ledger = ReplayLedger(open_catalog(args.db, create=True).engine)
    report = execute(
        plan,
        store=open_store(args.store),
        ledger=ledger,
        committed_reader=(
            MarkerAwareReader(plan.spec.target.bootstrap_servers)
            if args.reader == "marker-aware"
            else None
        ),
        hook=hook if args.kill_at else None,
        parallelism=args.parallelism,
    )
    print(report.model_dump_json(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
