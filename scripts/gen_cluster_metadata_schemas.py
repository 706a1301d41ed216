"""Regenerate ``segment_lib/cluster_metadata/schemas.py`` from Kafka's own message schemas.

Kafka ships the JSON schemas of its metadata records inside ``kafka-metadata-<v>.jar``
(``common/metadata/*.json``) and those of the KRaft control records inside
``kafka-clients-<v>.jar`` (``common/message/{LeaderChangeMessage,SnapshotHeaderRecord,...}.json``).
Every release keeps every version it ever wrote (``validVersions`` only grows), so the newest
release's schemas describe the records of every older one. This script transcribes the layouts
(field order, types, versions, nullable/tagged versions, defaults) into our own data form;
it reads the jars, it copies no code.

Usage: python scripts/gen_cluster_metadata_schemas.py LIBS_DIR \
           > segment_lib/cluster_metadata/schemas.py; ruff format that file
(LIBS_DIR: ``scripts/ensure-kafka.sh 4.4.0``'s output)
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

CONTROL = (
    "LeaderChangeMessage",
    "SnapshotHeaderRecord",
    "SnapshotFooterRecord",
    "KRaftVersionRecord",
    "VotersRecord",
)
PRIMITIVES = {
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "float64",
    "bool",
    "uuid",
    "string",
    "bytes",
}
MAX = 0x7FFF


def strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def vrange(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def camel(name: str) -> str:
    return name[0].lower() + name[1:]


def snake_upper(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def field_src(f: dict[str, Any], common: dict[str, Any], indent: str) -> str:
    ftype = f["type"]
    elem = ftype[2:] if ftype.startswith("[]") else ftype
    sub = f.get("fields")
    if elem not in PRIMITIVES:
        sub = sub if sub is not None else common[elem]["fields"]
        kind = ("[]" if ftype.startswith("[]") else "") + "struct"
    else:
        kind = ftype
    args = [repr(camel(f["name"])), repr(kind), repr(vrange(f["versions"]))]
    kw = []
    if vrange(f.get("nullableVersions")):
        kw.append(f"nullable={vrange(f['nullableVersions'])!r}")
    if "tag" in f:
        kw.append(f"tag={f['tag']}")
        kw.append(f"tagged={vrange(f.get('taggedVersions'))!r}")
    if "default" in f:
        kw.append(f"default={str(f['default'])!r}")
    if f["name"] in ("Salt", "SaltedPassword", "StoredKey", "ServerKey"):
        kw.append("secret=True")
    if sub:
        inner = ",\n".join(field_src(s, common, indent + "    ") for s in sub)
        kw.append(f"fields=(\n{inner},\n{indent})")
    return f"{indent}F({', '.join(args + kw)})"


def message_src(spec: dict[str, Any], type_name: str) -> str:
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    fields = "".join(field_src(f, common, "            ") + ",\n" for f in spec["fields"])
    return (
        f"    M(\n        {spec['name']!r},\n        {type_name!r},\n"
        f"        {spec.get('apiKey')!r},\n        {vrange(spec['validVersions'])!r},\n"
        f"        {vrange(spec.get('flexibleVersions'))!r},\n        (\n{fields}        ),\n    )"
    )


def main(libs: Path) -> None:
    version = next(libs.glob("kafka-metadata-*.jar")).stem.removeprefix("kafka-metadata-")
    specs: list[dict[str, Any]] = []
    with zipfile.ZipFile(next(libs.glob("kafka-metadata-*.jar"))) as jar:
        for name in sorted(jar.namelist()):
            if name.startswith("common/metadata/") and name.endswith(".json"):
                specs.append(json.loads(strip_comments(jar.read(name).decode())))
    controls: list[dict[str, Any]] = []
    with zipfile.ZipFile(next(libs.glob("kafka-clients-*.jar"))) as jar:
        for c in CONTROL:
            controls.append(
                json.loads(strip_comments(jar.read(f"common/message/{c}.json").decode()))
            )
    specs.sort(key=lambda s: s["apiKey"])
    out = [
        f'"""Kafka {version}\'s metadata and KRaft control record layouts, as data (generated).',
        "",
        "Transcribed from the JSON schemas inside Kafka's own jars by",
        "``scripts/gen_cluster_metadata_schemas.py``; edit that script, not this file. Each",
        "message: name, MetadataRecordType name, api key (type id), valid versions, flexible",
        "versions, fields. Version ranges are ``(low, high)`` inclusive, 32767: open-ended.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        "from segment_lib.cluster_metadata._schema import Field as F",
        "from segment_lib.cluster_metadata._schema import Message as M",
        "",
        '__all__ = ["CONTROL_MESSAGES", "KAFKA_SCHEMA_VERSION", "METADATA_MESSAGES"]',
        "",
        f"KAFKA_SCHEMA_VERSION: Final = {version!r}",
        "",
        "#: every metadata record type, by api key",
        "METADATA_MESSAGES: Final[tuple[M, ...]] = (",
    ]
    out += [message_src(s, snake_upper(s["name"])) + "," for s in specs]
    out += [
        ")",
        "",
        "#: the KRaft control records' values, by ControlRecordType name",
        "CONTROL_MESSAGES: Final[dict[str, M]] = {",
    ]
    names = ("LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS")
    for n, s in zip(names, controls, strict=True):
        out.append(f"    {n!r}: " + message_src(s, n).lstrip() + ",")
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
