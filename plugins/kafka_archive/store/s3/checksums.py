"""What the S3 store's checksums say: the upload check and the whole-object SHA-256.

Contract: :func:`upload_problems` compares what HeadObject reports after an upload (size,
recorded ``sha256`` metadata, S3's SHA-256 flexible checksum - whole-object for a single PUT,
composite ``<base64>-<parts>`` for a multipart upload) with the source's
:class:`~kafka_archive.store._digest.SourceDigest`, and lists every disagreement (empty: the
object is the source). :func:`whole_object_sha256` reads the content's SHA-256 out of a
HeadObject response when the store's checksum is a whole-object one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import TYPE_CHECKING

from kafka_archive.store._digest import SourceDigest
from kafka_archive.store.base import META_SHA256

if TYPE_CHECKING:
    from mypy_boto3_s3.type_defs import HeadObjectOutputTypeDef

__all__ = ["upload_problems", "whole_object_sha256"]


def upload_problems(
    head: HeadObjectOutputTypeDef,
    digest: SourceDigest,
    multipart: bool,
    *,
    require_store_checksum: bool,
) -> list[str]:
    """How the uploaded object (``head``) differs from its source (``digest``); [] if not."""
    problems: list[str] = []
    if head.get("ContentLength") != digest.size:
        problems.append(f"stored size {head.get('ContentLength')} != source size {digest.size}")
    recorded = head.get("Metadata", {}).get(META_SHA256)
    if recorded != digest.sha256_hex:
        problems.append(f"recorded sha256 {recorded} != source sha256 {digest.sha256_hex}")
    checksum = head.get("ChecksumSHA256")
    if checksum is None:
        if require_store_checksum:
            problems.append(
                "the store returned no SHA-256 checksum (set require_store_checksum=False "
                "only for S3-compatible stores without flexible-checksum support)"
            )
    else:
        value, dash, count = checksum.partition("-")
        if multipart:
            want = digest.composite_b64
            if dash and count != str(len(digest.part_sha256)):
                problems.append(
                    f"store reports {count} parts, source has {len(digest.part_sha256)}"
                )
        else:
            want = digest.sha256_b64
            if dash:
                problems.append(f"store reports a {count}-part object for a single PUT")
        if value != want:
            problems.append(f"store checksum {value} != source checksum {want}")
    checksum_type = head.get("ChecksumType")
    want_type = "COMPOSITE" if multipart else "FULL_OBJECT"
    if checksum_type is not None and checksum_type != want_type:
        problems.append(f"store checksum type {checksum_type}, expected {want_type}")
    return problems


def _b64_to_hex(value: str) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc
    if len(raw) != hashlib.sha256().digest_size:
        raise ValueError("not a SHA-256 digest")
    return raw.hex()


_MULTIPART_ETAG = re.compile(r'"?[0-9a-fA-F]+-\d+"?')


def whole_object_sha256(head: HeadObjectOutputTypeDef) -> str | None:
    """The object's SHA-256 (hex) if the store's checksum is a whole-object one, else None.

    A multipart object's checksum is composite - not the content's SHA-256. S3 marks it with a
    ``-N`` suffix and ``ChecksumType: COMPOSITE``; some S3-compatible stores (and moto) omit
    both from HeadObject, so a multipart ETag (``<md5>-N``) is taken as a sign of it too.
    """
    checksum = head.get("ChecksumSHA256")
    if checksum is None or "-" in checksum:
        return None
    checksum_type = head.get("ChecksumType")
    if checksum_type == "COMPOSITE":
        return None
    if checksum_type is None and _MULTIPART_ETAG.fullmatch(head.get("ETag", "")):
        return None
    try:
        return _b64_to_hex(checksum)
    except ValueError:
        return None
