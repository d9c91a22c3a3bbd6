"""The loopback fault's TLS material: its CA (trustme), made on first use with its PEM
file in the fault's temporary directory (what clients trust: ``fault.ca_file``), and the
server certificate of each stage: from that CA for the loopback address, from that CA for
``MISMATCH_HOSTNAME`` only (``tls_hostname_mismatch``), or from another CA
(``tls_untrusted_ca``)."""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

from leakcheck.faults import HarnessError

if TYPE_CHECKING:
    import trustme

__all__ = ["MISMATCH_HOSTNAME", "TRUSTME_MISSING", "LoopbackCA"]

#: the only name the ``tls_hostname_mismatch`` certificate carries
MISMATCH_HOSTNAME = "upstream.other-host.example"
#: why an HTTPS stage cannot run here (a ``HarnessError``: the harness, not the gateway)
TRUSTME_MISSING = (
    "the loopback transport needs the trustme package for its HTTPS and TLS stages (a "
    "throwaway CA and certificates), and it is not installed: pip install trustme, or "
    "'pytest-leakcheck[loopback]' (leakcheck mcp's extra, 'pytest-leakcheck[mcp]', has it)"
)


class LoopbackCA:
    """The CA of one fault, for certificates naming ``host``; ``directory`` makes (once)
    the temporary directory its PEM file goes to."""

    def __init__(self, host: str, directory: Callable[[], str]) -> None:
        self.host = host
        self._directory = directory
        self._ca: trustme.CA | None = None
        #: the PEM path of the CA, once made
        self.file: str | None = None

    @property
    def made(self) -> bool:
        return self._ca is not None

    def make(self) -> trustme.CA:
        """The CA, made (and its PEM file written) on the first call."""
        if self._ca is not None:
            return self._ca
        try:
            import trustme
        except ImportError:
            raise HarnessError(TRUSTME_MISSING) from None  # the message says it all
        tmpdir = self._directory()
        self._ca = trustme.CA(organization_name="leakcheck loopback CA")
        self.file = os.path.join(tmpdir, "ca.pem")
        self._ca.cert_pem.write_to_path(self.file)
        return self._ca

    def server_context(self, stage: str) -> ssl.SSLContext:
        """The server side of an HTTPS fault at ``stage``: a certificate clients trusting
        ``file`` accept, or the one the TLS stage needs them to reject."""
        ca = self.make()  # first: without trustme, the message that names it
        import trustme

        if stage == "tls_untrusted_ca":
            cert = trustme.CA(organization_name="leakcheck untrusted CA").issue_cert(self.host)
        elif stage == "tls_hostname_mismatch":
            cert = ca.issue_cert(MISMATCH_HOSTNAME)
        else:
            cert = ca.issue_cert(self.host)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        return context
