"""Amazon S3 and S3-compatible stores (MinIO, Ceph RGW, ...) as an :class:`ObjectStore`, via boto3.

Configuration:
    * The client comes from ``boto3.session.Session()``, so the standard AWS environment is
      honoured natively: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
      ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` (with ``~/.aws/config`` and ``credentials``),
      ``AWS_DEFAULT_REGION`` and ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``. botocore itself
      does not read ``AWS_REGION``; like the other AWS SDKs this store gives it precedence over
      ``AWS_DEFAULT_REGION``. Credentials are never taken as options, stored on the object,
      logged or put in error messages.
    * With a custom endpoint (option or environment) path-style addressing is the default,
      which is what S3-compatible stores expect.
    * ``sse='AES256'`` or ``sse='aws:kms'`` (+ ``sse_kms_key_id``) is sent on every write.

Writes (``put_file`` / ``put_bytes``) go through boto3's transfer manager: a single PUT below
``multipart_threshold``, a multipart upload above it. Integrity is checked end to end:

    1. the source is hashed once, giving its SHA-256 and - when it will be uploaded in parts -
       the SHA-256 of every part, cut at exactly the part size the transfer manager will use
       (``s3transfer``'s ``ChunksizeAdjuster``);
    2. the upload uses S3 flexible checksums (``ChecksumAlgorithm='SHA256'``): botocore hashes
       each request body as it sends it and S3 rejects a body that does not match; for a
       single PUT the SHA-256 from step 1 is sent, so S3 verifies the object against *our*
       digest;
    3. afterwards ``HeadObject(ChecksumMode='ENABLED')`` must report the expected size, the
       ``sha256`` user metadata, and the SHA-256 checksum: the whole-object digest for a single
       PUT, or for a multipart upload the *composite* checksum (SHA-256 of the concatenated
       part digests, reported as ``<base64>-<parts>``). A mismatch deletes the object and
       raises :class:`IntegrityError`.

Reads: ``get_bytes`` and ``open_stream`` check the content against the recorded ``sha256``.
botocore also validates a GET's whole-object flexible checksum by default; for an
S3-compatible store that misreports checksums, set ``AWS_RESPONSE_CHECKSUM_VALIDATION=
when_required`` (a standard botocore setting) - the ``sha256`` check still applies.

Failures: botocore retries each request (``retry_mode`` standard/adaptive, ``max_attempts``
per request, covering 5xx, throttling and connection errors). Whole operations are retried on
top of that with tenacity (``op_attempts``), which covers what botocore cannot: a transfer that
failed as a whole, or a response body cut off mid-stream. A failed multipart upload is aborted
(by s3transfer, and again by this store for every upload id it saw created), so it neither
becomes visible under the key nor lingers as hidden billed parts; a bucket lifecycle rule
``AbortIncompleteMultipartUpload`` remains the backstop for a process killed mid-upload.

Modules (one responsibility each):

* :mod:`~kafka_archive.store.s3.options` - the ``s3://`` URI and :class:`S3Options`;
* :mod:`~kafka_archive.store.s3.client` - the boto3 client (session, region, endpoint);
* :mod:`~kafka_archive.store.s3.errors` - S3/botocore failures -> the store's errors;
* :mod:`~kafka_archive.store.s3.retry` - whole-operation retries;
* :mod:`~kafka_archive.store.s3.transfer` - uploads and their multipart bookkeeping;
* :mod:`~kafka_archive.store.s3.conditional` - ``If-None-Match: *`` for ``put_if_absent``;
* :mod:`~kafka_archive.store.s3.checksums` - the upload check and whole-object SHA-256;
* :mod:`~kafka_archive.store.s3.store` - :class:`S3Store`, the operations.

This package's public API is :class:`S3Store`, :class:`S3Options` and :func:`parse_s3_uri`.
"""

from __future__ import annotations

from kafka_archive.store.s3.options import S3Options, parse_s3_uri
from kafka_archive.store.s3.store import S3Store

__all__ = ["S3Options", "S3Store", "parse_s3_uri"]
