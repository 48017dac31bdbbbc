"""What `recon demo` leaves on disk is its owner's only.

Before: `.recon` and `.recon/demo` were created 0755 and the process logs 0644 (the settings
file inside was 0600, and docs/operations.md promises 0700 folders): every local user could
list the demo's files and read its logs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.security.conftest import run_recon


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_demo_folders_are_0700_and_its_logs_0600(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {
        "RECON_STATE_DIR": str(state),
        "RECON_GATEWAY_API_KEY": "ak_test_recon",
        "RECON_COMPANY_API_KEY": "ck_test_recon",
        "RECON_ADMIN_TOKEN": "demo-files-admin-token-0123456789",
    }
    # A permissive umask, as on many desktops: the modes must not depend on it.
    old = os.umask(0o002)
    try:
        result = run_recon(env, "demo", "--report", str(tmp_path / "report.html"), timeout=300)
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    folders = [state, state / "demo", state / "demo" / "logs"]
    assert {str(f): oct(_mode(f)) for f in folders} == {str(f): "0o700" for f in folders}
    logs = sorted((state / "demo" / "logs").glob("*.log"))
    assert logs
    assert {p.name: oct(_mode(p)) for p in logs} == {p.name: "0o600" for p in logs}
