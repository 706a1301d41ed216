"""The scale curve: catalog build, queries, prune and catalog size as the archive grows.

Setup, per database (``--db sqlite,postgresql``; PostgreSQL is started by this script with
``tests/support/postgres.py``): a local store (``file://``) under a scratch directory. A
template broker (the broker-faithful writer, :mod:`kafka_archive_dev.writer`) writes one small
topic and ``__consumer_offsets`` commits of a few groups for every partition of the big topic;
the real archiver archives it. Then the big topic ``scale`` (``--partitions``, 1000 by default)
is grown in steps to each of ``--sizes`` segments (1e3, 1e4, 1e5): every new segment is the
template's first segment **re-keyed** (every batch's base offset moved to the new segment's
offsets, its timestamps moved forward and its CRC-32C recomputed; the manifest rewritten with
the new offsets, timestamps, leader-epoch start, SHA-256, CRC and keys) and put into the store
through the store's API, ``.log`` first and manifest last, as the archiver does. Segment ``i``
of every partition is older than segment ``i + 1`` of any, so "oldest" is the order of growth.

At each size, timed:

* ``build``: :func:`kafka_archive.catalog.build.build_catalog` (in-process runner) of the new
  segments only; reported in total and per new segment (it should not grow with the archive);
* queries through :class:`kafka_archive.services.catalog_queries.CatalogQueryService`, after a
  warm-up, ``--repeat`` calls each at random arguments (median and p95, ms; the whole-archive
  reports ``gaps`` and ``topics``: one warm-up and ``--repeat / 10`` calls): ``offsets_one``
  (one partition, catalog only), ``offsets_topic`` (all partitions of the topic, catalog only),
  ``locate`` (one offset: catalog + one ranged read), ``group_offsets`` (a group that committed
  for every partition), ``gaps`` (the topic) and ``topics`` (the cluster);
* ``prune``: :func:`kafka_archive.catalog.prune.prune` for real, with a ``max_age`` policy
  whose cut-off removes the oldest ``--prune-fraction`` (10%) of the segments archived so far
  (done last at each size; the next size grows the pruned archive, as in production);
* ``catalog_bytes``: the SQLite file, or ``pg_database_size``.

Printed and written to ``benchmarks/results/scale-*.json``; ``--plot`` also draws
``docs/images/scale-curve.png``.

    .venv/bin/python benchmarks/bench_scale.py --plot
    .venv/bin/python benchmarks/bench_scale.py --sizes 1000,10000 --db sqlite
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _data import REPO_ROOT as REPO
from _data import machine, result_file, scratch_dir
from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord

CLUSTER = "bench"
TOPIC = "scale"
TEMPLATE_TOPIC = "template"
GROUPS = ("billing", "audit", "search")
T0 = 1_700_000_000_000
QUERIES = ("offsets_one", "offsets_topic", "locate", "group_offsets", "gaps", "topics")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


class Template:
    """The template segment: its ``.log`` bytes, manifest and offset/time stride."""

    def __init__(self, data: bytes, manifest: Any) -> None:
        self.data = data
        self.manifest = manifest
        self.stride: int = manifest.end_offset - manifest.base_offset
        self.duration_ms: int = manifest.max_timestamp - manifest.first_timestamp
        self.span_ms = 0  # set by :meth:`layout`
        self.batches: list[tuple[int, int]] = []  # (position, length)
        pos = 0
        while pos < len(data):
            (length,) = _I32.unpack_from(data, pos + 8)
            self.batches.append((pos, 12 + length))
            pos += 12 + length

    def layout(self, partitions: int) -> None:
        """Segment ``i`` of partition ``p`` starts at ``T0 + i * span_ms + p``: all segments
        ``i`` end before any segment ``i + 1`` starts."""
        self.span_ms = self.duration_ms + partitions + 1_000

    def max_ts(self, n: int, partitions: int) -> int:
        """The max timestamp of the ``n``-th segment in growth order."""
        i, p = divmod(n, partitions)
        return T0 + i * self.span_ms + p + self.duration_ms

    def rekeyed(self, base: int, shift_ms: int) -> bytes:
        """The template's bytes as the segment at ``base``, ``shift_ms`` later (valid CRCs)."""
        buf = bytearray(self.data)
        for pos, size in self.batches:
            _I64.pack_into(buf, pos, _I64.unpack_from(buf, pos)[0] + base)
            for field in (pos + 27, pos + 35):  # firstTimestamp, maxTimestamp
                _I64.pack_into(buf, field, _I64.unpack_from(buf, field)[0] + shift_ms)
            _U32.pack_into(buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : pos + size])))
        return bytes(buf)


def write_template(root: Path, partitions: int) -> list[str]:
    """A broker with a few rolled segments of the template topic and, for every partition of
    the big topic, commits of :data:`GROUPS` in ``__consumer_offsets``; its log dirs."""
    clock = ManualClock(T0 - 86_400_000)
    broker = BrokerWriter(root / "broker-1", 1, clock=clock, offsets_partitions=3)
    pw = broker.partition(TEMPLATE_TOPIC, 0, segment_bytes=4_000, index_interval_bytes=500)
    n = 0
    while len(list(pw.dir.glob("*.log"))) <= 2:
        clock.advance(10)
        pw.append([WriteRecord(f"k{n}".encode(), b"v" * 200, (), clock.now_ms)] * 1)
        n += 1
    pw.roll()
    rng = random.Random(3)
    for round_ in range(3):
        for group in GROUPS:
            clock.advance(1_000)
            broker.commit_offsets(
                group, {(TOPIC, p): rng.randint(0, 1000) * (round_ + 1) for p in range(partitions)}
            )
    for part in broker.partitions.values():
        if part.active.size:
            part.roll()
    broker.close()
    return [str(d) for d in broker.log_dirs]


def load_template(store: Any) -> Template:
    from kafka_archive.archive.manifest import iter_manifests

    first = next(iter_manifests(store, CLUSTER, TEMPLATE_TOPIC, 0))
    return Template(store.get_bytes(first.log_file.key), first)


def grow(store: Any, tmpl: Template, partitions: int, start: int, stop: int) -> None:
    """Put segments ``start .. stop - 1`` (in growth order) of the big topic into the store.

    The local store fsyncs every object, sidecar and directory (80% of the time here); scratch
    data needs no durability, so ``os.fsync`` is a no-op while this runs."""
    real_fsync = os.fsync
    os.fsync = _no_fsync
    try:
        _grow(store, tmpl, partitions, start, stop)
    finally:
        os.fsync = real_fsync


def _no_fsync(fd: Any) -> None:
    del fd


def _grow(store: Any, tmpl: Template, partitions: int, start: int, stop: int) -> None:
    from kafka_archive.archive.layout import manifest_key, object_key
    from kafka_archive.archive.manifest import EpochRange, ManifestFile

    m = tmpl.manifest
    for n in range(start, stop):
        i, p = divmod(n, partitions)
        base = i * tmpl.stride
        shift = (T0 - m.first_timestamp) + i * tmpl.span_ms + p
        data = tmpl.rekeyed(base, shift)
        sha = hashlib.sha256(data).hexdigest()
        key = object_key(CLUSTER, TOPIC, p, base, sha, ".log")
        store.put_if_absent(key, data, sha256=sha)
        new = m.model_copy(
            update={
                "topic": TOPIC,
                "partition": p,
                "base_offset": base,
                "end_offset": base + tmpl.stride,
                "first_offset": m.first_offset + base,
                "last_offset": m.last_offset + base,
                "first_timestamp": m.first_timestamp + shift,
                "max_timestamp": m.max_timestamp + shift,
                "offset_of_max_timestamp": m.offset_of_max_timestamp + base,
                "leader_epochs": [
                    EpochRange(epoch=e.epoch, start_offset=base) for e in m.leader_epochs
                ],
                "segment_sha256": sha,
                "files": [
                    ManifestFile(
                        role="log",
                        name=f"{base:020d}.log",
                        key=key,
                        size=len(data),
                        sha256=sha,
                        crc32c=f"{crc32c.crc32c(data):08x}",
                    )
                ],
                "archived_at": m.archived_at.fromtimestamp((T0 + n) / 1000, m.archived_at.tzinfo),
            }
        )
        store.put_if_absent(manifest_key(CLUSTER, TOPIC, p, base, sha), new.to_json_bytes())


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 3) -> dict[str, float]:
    for _ in range(warmup):
        fn()
    xs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(xs), 3), "p95_ms": round(percentile(xs, 0.95), 3)}


def measure_queries(
    cat: Any, store: Any, tmpl: Template, partitions: int, size: int, repeat: int, pruned: int
) -> dict[str, Any]:
    from kafka_archive.services.catalog_queries import CatalogQueryService

    rng = random.Random(size)
    per = size // partitions
    lo_i = -(-pruned // partitions)  # above what prune removed so far
    span = tmpl.span_ms

    def at() -> int:
        return T0 + rng.randint(lo_i, per - 1) * span + rng.randrange(span)

    svc = CatalogQueryService(catalog=cat, store=store)
    out = {
        "offsets_one": timed(
            lambda: svc.offsets(CLUSTER, TOPIC, at(), [rng.randrange(partitions)], exact=False),
            repeat,
        ),
        "offsets_topic": timed(lambda: svc.offsets(CLUSTER, TOPIC, at(), exact=False), repeat),
        "locate": timed(
            lambda: svc.locate(
                CLUSTER,
                TOPIC,
                rng.randrange(partitions),
                rng.randint(lo_i, per - 1) * tmpl.stride + rng.randrange(tmpl.stride),
            ),
            repeat,
        ),
        "group_offsets": timed(lambda: svc.group_offsets(CLUSTER, rng.choice(GROUPS)), repeat),
        "gaps": timed(lambda: svc.gaps(CLUSTER, TOPIC), max(3, repeat // 10), warmup=1),
        "topics": timed(lambda: svc.topics(CLUSTER), max(3, repeat // 10), warmup=1),
    }
    answer = svc.group_offsets(CLUSTER, GROUPS[0])
    assert len([g for g in answer if g.topic == TOPIC]) == partitions, len(answer)
    return out


def catalog_bytes(cat: Any, kind: str, path: Path) -> int:
    from sqlalchemy import text

    if kind == "sqlite":
        return path.stat().st_size + sum(
            p.stat().st_size for p in path.parent.glob(path.name + "-wal")
        )
    with cat.engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def run_db(
    kind: str, url: str, work: Path, sizes: list[int], args: argparse.Namespace
) -> list[dict[str, Any]]:
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.prune import prune
    from kafka_archive.catalog.retention import RetentionPolicy
    from kafka_archive.store import open_store

    store = open_store(str(work / "store"))
    run_archive(
        cluster=CLUSTER,
        broker_id=1,
        log_dirs=write_template(work / "logs", args.partitions),
        store=store,
    )
    tmpl = load_template(store)
    tmpl.layout(args.partitions)
    rows: list[dict[str, Any]] = []
    have = 0
    pruned = 0  # segments below this growth index are pruned
    with open_catalog(url, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())  # template + commits
        for size in sizes:
            t = time.perf_counter()
            grow(store, tmpl, args.partitions, have, size)
            gen = time.perf_counter() - t
            t = time.perf_counter()
            report = build_catalog(cat, store.uri, runner=InProcessRunner())
            build = time.perf_counter() - t
            new = size - have
            row: dict[str, Any] = {
                "db": kind,
                "segments": size,
                "new_segments": new,
                "generate_seconds": round(gen, 2),
                "build_seconds": round(build, 2),
                "build_ms_per_new_segment": round(build * 1000 / new, 3),
                "build_report": {k: v for k, v in report.to_json().items() if isinstance(v, int)},
            }
            row.update(
                measure_queries(cat, store, tmpl, args.partitions, size, args.repeat, pruned)
            )
            row["catalog_bytes"] = catalog_bytes(cat, kind, work / "catalog.db")
            # prune the oldest fraction of what is archived: a max_age cut-off at that segment
            pruned = max(pruned, round(size * args.prune_fraction))
            cutoff = tmpl.max_ts(pruned - 1, args.partitions) + 1
            policy = [RetentionPolicy(name="scale", topic=TOPIC, max_age=3_600_000)]
            t = time.perf_counter()
            pr = prune(cat, store, policy, cluster=CLUSTER, now_ms=cutoff + 3_600_000)
            secs = time.perf_counter() - t
            row["prune"] = {
                "segments": pr.segments,
                "seconds": round(secs, 2),
                "ms_per_segment": round(secs * 1000 / pr.segments, 3) if pr.segments else None,
            }
            have = size
            rows.append(row)
            print(json.dumps(row), flush=True)
    store.close()
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as the Markdown table of docs/performance.md (p50 / p95 in ms)."""
    head = (
        "| db | segments | build ms / new segment | offsets, 1 partition | offsets, topic | "
        "locate | group offsets | gaps | topics | prune ms / segment | catalog MB |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        q = [f"{r[k]['p50_ms']:.3g} / {r[k]['p95_ms']:.3g}" for k in QUERIES]
        prune_ms = r["prune"]["ms_per_segment"]
        lines.append(
            f"| {r['db']} | {r['segments']:,} | {r['build_ms_per_new_segment']:.3g} | "
            + " | ".join(q)
            + f" | {prune_ms:.3g} | {r['catalog_bytes'] / 1e6:.1f} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = {"sqlite": "-", "postgresql": "--"}
    for kind in sorted({r["db"] for r in rows}):
        rs = [r for r in rows if r["db"] == kind]
        xs = [r["segments"] for r in rs]
        for c, q in enumerate(QUERIES):
            ys = [r[q]["p50_ms"] for r in rs]
            ax1.plot(xs, ys, styles[kind], color=f"C{c}", marker="o", label=f"{q} ({kind})")
        ax2.plot(xs, [r["build_ms_per_new_segment"] for r in rs], styles[kind], color="C0",
                 marker="o", label=f"build per new segment ({kind})")  # fmt: skip
        ax2.plot(xs, [r["prune"]["ms_per_segment"] for r in rs], styles[kind], color="C1",
                 marker="s", label=f"prune per pruned segment ({kind})")  # fmt: skip
    for ax, title in ((ax1, "query latency, median (ms)"), (ax2, "ms per segment")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("segments in the archive")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--db", default="sqlite,postgresql")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--prune-fraction", type=float, default=0.1)
    ap.add_argument("--plot", action="store_true", help="draw docs/images/scale-curve.png")
    ap.add_argument("--from-json", type=Path, help="only redraw the table and plot of a result")
    args = ap.parse_args()
    if args.from_json:
        saved: list[dict[str, Any]] = json.loads(args.from_json.read_text())["rows"]
        print(markdown_table(saved))
        if args.plot:
            plot(saved, REPO / "docs" / "images" / "scale-curve.png")
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started = machine()  # the commit the run measures, not the one checked out when it ends
    rows: list[dict[str, Any]] = []
    for kind in args.db.split(","):
        work = scratch_dir(f"bench-scale-{kind}-")
        server = None
        try:
            if kind == "sqlite":
                url = str(work / "catalog.db")
            else:
                from support.postgres import start_server

                server = start_server()
                url = server.create_database("scale")
            rows.extend(run_db(kind, url, work, sizes, args))
        finally:
            if server is not None:
                server.stop()
    out = result_file("scale")
    out.write_text(
        json.dumps(
            {"benchmark": "scale", "args": vars(args), "rows": rows, "machine": started},
            indent=1,
        )
        + "\n"
    )
    print(f"written to {out}")
    print(markdown_table(rows))
    if args.plot:
        plot(rows, REPO / "docs" / "images" / "scale-curve.png")


if __name__ == "__main__":
    main()
