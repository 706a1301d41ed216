"""The boto3 S3 client of an S3 store: session, region, endpoint, addressing, botocore retries.

Contract: :func:`make_client` builds the client from the standard AWS environment (profile,
credentials chain, ``AWS_REGION`` over the session's region, ``AWS_ENDPOINT_URL[_S3]``) and
:class:`~kafka_archive.store.s3.options.S3Options`; a custom endpoint (from the options, the
environment or the profile) gets path-style addressing unless one was chosen. A missing
profile or an endpoint carrying credentials is a
:class:`~kafka_archive.store.errors.StoreConfigError`. Credentials are never read here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

import boto3
import botocore.config
from botocore import exceptions as bex

from kafka_archive.store.errors import StoreConfigError
from kafka_archive.store.s3.options import S3Options, check_endpoint

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["make_client"]


def make_client(opts: S3Options, session: boto3.session.Session | None, uri: str) -> S3Client:
    """A client for ``uri`` configured by ``opts`` (``session``: default a new one)."""
    try:
        session = session or boto3.session.Session(profile_name=opts.profile)
    except bex.ProfileNotFound as exc:
        raise StoreConfigError(
            f"AWS profile not found: {exc}",
            uri=uri,
            hint="Check AWS_PROFILE / the profile option and ~/.aws/config",
        ) from exc
    region = opts.region or os.environ.get("AWS_REGION") or session.region_name
    custom_endpoint = (
        opts.endpoint_url
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
    )
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if os.environ.get(var):
            check_endpoint(os.environ[var], var)
    style: Literal["auto", "path", "virtual"] = opts.addressing_style or (
        "path" if custom_endpoint else "auto"
    )

    def build(addressing_style: Literal["auto", "path", "virtual"]) -> S3Client:
        config = botocore.config.Config(
            region_name=region,
            retries={"mode": opts.retry_mode, "total_max_attempts": opts.max_attempts},
            s3={"addressing_style": addressing_style},
            connect_timeout=opts.connect_timeout,
            read_timeout=opts.read_timeout,
            max_pool_connections=max(10, opts.max_concurrency + 2),
            user_agent_extra="kafka-archive",
        )
        client: S3Client = session.client("s3", endpoint_url=opts.endpoint_url, config=config)
        return client

    client = build(style)
    if opts.addressing_style is None and style == "auto":
        # An endpoint may also come from the profile's config file (endpoint_url); only the
        # built client knows. S3-compatible stores want path-style addressing.
        host = urlsplit(client.meta.endpoint_url).hostname or ""
        if not host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
            check_endpoint(client.meta.endpoint_url, "the configured endpoint_url")
            client.close()
            client = build("path")
    return client
