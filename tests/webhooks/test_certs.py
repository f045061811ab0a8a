"""The webhook server's certificate files (webhooks/certs.py): missing files say what to mount. (A renewed
certificate served from the next connection on: test_server.py.)"""

from __future__ import annotations

import pytest

from mxjob_controller.webhooks.certs import CertificateError, CertificateFiles


def test_missing_certificate_files_say_what_to_mount(tmp_path):
    with pytest.raises(CertificateError, match=r"no tls\.crt and no tls\.key in .*: mount the webhook's TLS Secret"):
        CertificateFiles(tmp_path).load()
