"""Ports a person moves on a laptop: `make sandbox` takes its port, and the README names the
four variables that must move with the two ports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The variables that carry a port: the sandbox's two URLs, recon's port and its public URL.
PORT_VARIABLES = ("RECON_GATEWAY_URL", "RECON_COMPANY_URL", "PORT", "RECON_PUBLIC_URL")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_sandbox_listens_where_it_is_told() -> None:
    planned = subprocess.run(
        ["make", "-n", "sandbox", "SANDBOX_PORT=9191"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"recon sandbox --port 9191 ", planned), planned
    default = subprocess.run(
        ["make", "-n", "sandbox"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "recon sandbox --port 8080 " in default, default


def test_the_readme_says_which_variables_move_with_the_ports() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = next(p for p in readme.split("\n\n") if p.startswith("**Ports move together.**"))
    for name in PORT_VARIABLES:
        assert f"`{name}`" in paragraph, name
    assert "SANDBOX_PORT" in paragraph
