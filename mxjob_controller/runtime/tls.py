"""A server's self-made TLS material: a CA of its own and a serving certificate it signs, made at start.

Used by the embedded API server (``local/apiserver/auth/serving_cert.py``: kube's names) and by the webhook server
when no certificate is given (``webhooks/server.py``: the webhook Service's names). Clients verify the server
against the CA (a kubeconfig's ``certificate-authority-data``, a webhook configuration's ``caBundle``): nothing
skips verification. The serving certificate names ``localhost``, ``127.0.0.1``, ``::1``, the listening host and the DNS
names the caller gives. Keys are ECDSA P-256 (fast to make; Go and OpenSSL both verify them).

OpenSSL loads certificates and keys only from files. The CA and the serving certificate (public) are written to a
private directory (0700, the files 0600) that :meth:`TLSMaterial.close` removes, and so does a finalizer if ``close``
is never called (a server whose construction failed, a process that exits without stopping its server). The private
key is on disk only while :meth:`TLSMaterial.server_context` loads it (0600, removed right after): a process killed at
any other moment leaves no key behind. Nothing here logs a key or a certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import tempfile
import weakref
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_IPS = ("127.0.0.1", "::1")
_VALIDITY = datetime.timedelta(days=365)
_BACKDATE = datetime.timedelta(minutes=5)   # clock skew between the server and its clients


class TLSMaterial:
    """A CA and a serving certificate for ``host`` and ``dns_names``, on disk until :meth:`close`; the key in
    memory."""

    def __init__(self, host: str = "127.0.0.1", dns_names: tuple[str, ...] = (), *,
                 common_name: str = "mxjob-controller", ca_name: str = "mxjob-local-ca",
                 prefix: str = "mxjob-tls-") -> None:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
        ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - _BACKDATE).not_valid_after(now + _VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(ca_ski, critical=False)
                   .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - _BACKDATE).not_valid_after(now + _VALIDITY)
                .add_extension(x509.SubjectAlternativeName(_alt_names(host, ("localhost", *dns_names))),
                               critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False,
                                             crl_sign=False, content_commitment=False, data_encipherment=False,
                                             key_agreement=False, encipher_only=False, decipher_only=False),
                               critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
        self._key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())
        self.directory = Path(tempfile.mkdtemp(prefix=prefix))   # mkdtemp: mode 0700
        # Registered before anything is written: whatever happens next, the directory goes (at the latest at exit).
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.directory), ignore_errors=True)
        self.ca_file = self.directory / "ca.crt"
        self.cert_file = self.directory / "tls.crt"
        self.key_file = self.directory / "tls.key"   # exists only inside server_context()
        _write_private(self.ca_file, self.ca_pem)
        _write_private(self.cert_file, cert.public_bytes(serialization.Encoding.PEM))

    def server_context(self) -> ssl.SSLContext:
        """:func:`server_context` of this pair. The key file is written for OpenSSL to load and removed as soon as
        it has (the context keeps the key)."""
        fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self._key_pem)
            return server_context(self.cert_file, self.key_file)
        finally:
            self.key_file.unlink(missing_ok=True)

    def close(self) -> None:
        self._cleanup()


def _write_private(path: Path, data: bytes) -> None:
    """``data`` in a new file only its owner may read (0600 whatever the umask), as the cluster's other files."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def server_context(cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]) -> ssl.SSLContext:
    """A server's TLS context: TLS 1.2 or newer, HTTP/1.1 offered by ALPN (kubectl and kube-apiserver then speak
    HTTP/1.1 rather than asking for h2)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _alt_names(host: str, dns_names: tuple[str, ...]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(dns_names)]
    ips = list(_IPS)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host and host not in dns_names:
            names.append(x509.DNSName(host))
    else:
        if not address.is_unspecified and str(address) not in ips:
            ips.append(str(address))
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    return names
