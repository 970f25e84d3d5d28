"""A self-signed CA and a serving certificate for the webhook server, made and read with ``cryptography``.

The API server must trust the webhook's certificate: the CA's certificate is what goes into each webhook's
``caBundle``, the serving certificate (signed by that CA) names every host the API server may dial: the webhook
Service's DNS names and, for local runs, loopback and the listen address. Keys are ECDSA P-256 (fast to make,
accepted by every Kubernetes version); the CA lives ten years, the serving certificate one, and either is renewed
once two thirds of its lifetime have passed (``renewal_due``), leaving a third to roll out.

Everything here is pure: time comes in as an argument.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CA_LIFETIME",
    "SERVING_LIFETIME",
    "CertBundle",
    "covers",
    "expired",
    "issue",
    "names_of",
    "new_ca",
    "new_serving_cert",
    "renewal_due",
    "service_names",
]

CA_LIFETIME = dt.timedelta(days=3650)
SERVING_LIFETIME = dt.timedelta(days=365)
RENEW_AFTER = 2 / 3
"""Fraction of a certificate's lifetime after which it is renewed."""
_BACKDATE = dt.timedelta(minutes=5)
"""Certificates start a little in the past, so a clock slightly behind ours still accepts them."""
_CA_USAGE = x509.KeyUsage(
    digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
    key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CertBundle:
    """PEM-encoded CA certificate and key, serving certificate and key."""

    ca_cert: bytes
    ca_key: bytes | None
    cert: bytes
    key: bytes


def service_names(name: str, namespace: str) -> list[str]:
    """The DNS names a Service answers to inside the cluster."""
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _load_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("expected an ECDSA private key")
    return key


def new_ca(common_name: str, now: dt.datetime, lifetime: dt.timedelta = CA_LIFETIME) -> tuple[bytes, bytes]:
    """A self-signed CA: (certificate PEM, key PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _san(names: Iterable[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def new_serving_cert(
    ca_cert: bytes, ca_key: bytes, names: Iterable[str], now: dt.datetime, lifetime: dt.timedelta = SERVING_LIFETIME
) -> tuple[bytes, bytes]:
    """A serving certificate for ``names`` (DNS names or IP addresses) signed by the CA: (cert PEM, key PEM)."""
    names = list(names)
    issuer = x509.load_pem_x509_certificate(ca_cert)
    signer = _load_key(ca_key)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "webhook")]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(min(now + lifetime, issuer.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_san(names), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False)
        .sign(signer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def issue(
    names: Iterable[str],
    now: dt.datetime,
    *,
    common_name: str = "webhook-ca",
    ca_lifetime: dt.timedelta = CA_LIFETIME,
    serving_lifetime: dt.timedelta = SERVING_LIFETIME,
) -> CertBundle:
    """A new CA and a serving certificate for ``names`` signed by it."""
    ca_cert, ca_key = new_ca(common_name, now, ca_lifetime)
    cert, key = new_serving_cert(ca_cert, ca_key, names, now, serving_lifetime)
    return CertBundle(ca_cert, ca_key, cert, key)


def renewal_due(cert_pem: bytes, now: dt.datetime) -> bool:
    """Whether two thirds of the certificate's lifetime have passed (or it cannot be read)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return True
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return now >= start + (end - start) * RENEW_AFTER


def covers(cert_pem: bytes, names: Iterable[str]) -> bool:
    """Whether the certificate names every one of ``names`` in its subject alternative names."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    present = {str(v) for v in san.get_values_for_type(x509.IPAddress)} | set(san.get_values_for_type(x509.DNSName))
    return all(str(ipaddress.ip_address(n)) in present if _is_ip(n) else n in present for n in names)


def names_of(cert_pem: bytes) -> list[str]:
    """The subject alternative names of a certificate (empty when it cannot be read)."""
    try:
        san = x509.load_pem_x509_certificate(cert_pem).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except (ValueError, x509.ExtensionNotFound):
        return []
    return [
        *san.value.get_values_for_type(x509.DNSName),
        *(str(v) for v in san.value.get_values_for_type(x509.IPAddress)),
    ]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def expired(cert_pem: bytes, now: dt.datetime) -> bool:
    """Whether the (first) certificate in ``cert_pem`` is past its end of validity (or unreadable)."""
    try:
        return now >= x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
    except ValueError:
        return True
