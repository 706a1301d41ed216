"""TLS material for a test broker: a throw-away CA and a broker certificate for loopback.

Made with the ``cryptography`` package: the CA and the broker certificate (subject alternative
names ``127.0.0.1`` and ``localhost``, so clients verify the host name as in production), the
CA in PEM for the clients (librdkafka's ``ssl.ca.location``, kafka-python's ``ssl_cafile``) and
the broker's key and chain in a password-protected PKCS12 keystore for the JVM.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TlsFiles", "make_tls"]


@dataclass(frozen=True)
class TlsFiles:
    """``ca_pem``: the CA certificate (clients trust it); ``keystore``: the broker's PKCS12
    keystore, opened with ``keystore_password``."""

    ca_pem: Path
    keystore: Path
    keystore_password: str


def make_tls(folder: Path, keystore_password: str = "broker-keystore-pw") -> TlsFiles:
    """A new CA and a broker certificate signed by it, valid for a day, under ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-archive test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = folder / "ca.pem"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    keystore = folder / "broker.p12"
    keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker",
            key,
            cert,
            [ca],
            serialization.BestAvailableEncryption(keystore_password.encode()),
        )
    )
    return TlsFiles(ca_pem, keystore, keystore_password)
