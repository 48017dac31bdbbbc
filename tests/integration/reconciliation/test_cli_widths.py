"""`recon alerts list` and `recon report` fit the terminal, and give a pipe every value whole.

Driven through click's CliRunner at fixed widths (80 and 120 columns, as `--width`), without a
width (CliRunner's output is not a terminal, as a pipe is not), and once in a real pseudo-
terminal of 80 columns, where the width comes from the terminal itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recon.cli.main import cli
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.builders import Store

#: CLI commands read the real clock: items are hours old, well past the 1 s grace set below.
HOURS_AGO = utcnow() - timedelta(hours=3)

ELLIPSIS = "\u2026"


@pytest.fixture
def env(base_env: dict[str, str], db_url: str) -> dict[str, str]:
    return {
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_NOTIFICATION_GRACE_SECONDS": "1",
        "RECON_FINALITY_DEADLINE_SECONDS": "60",
    }


@pytest.fixture
def subjects(
    env: dict[str, str], session_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> dict[int, str]:
    """Three alerts with long subjects (refs, amounts, times), by id, as the store keeps them."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = Store(session_factory)
    holding, other = store.holding(), store.holding(locator=False)
    store.posting(holding, 7_770_000, posted=HOURS_AGO)  # never notified
    store.transfer(other, holding, 5_000, status="awaiting_finality", requested=HOURS_AGO)
    posting = store.posting(holding, 15_000, posted=HOURS_AGO)
    store.notification(
        "PAYMENT_RECEIVED", holding, 15_001, receipt=posting.receipt_ref, occurred=HOURS_AGO
    )
    invoke("reconcile")
    listed = json.loads(invoke("alerts", "list", "--json"))
    assert len(listed) == 3, listed
    return {a["id"]: a["subject"] for a in listed}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def blocks(output: str) -> dict[int, tuple[str, str]]:
    """Alert id -> (its header line, its subject lines joined back into one text)."""
    found: dict[int, tuple[str, list[str]]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("#"):
            current = int(line[1:].split()[0])
            found[current] = (line, [])
        else:
            assert current is not None and line.startswith("    "), line
            found[current][1].append(line.strip())
    return {k: (head, " ".join(body)) for k, (head, body) in found.items()}


def test_at_80_columns_subjects_wrap_or_end_in_an_ellipsis(subjects: dict[int, str]) -> None:
    out = invoke("alerts", "list", "--width", "80")
    assert max(len(line) for line in out.splitlines()) <= 80
    shown = blocks(out)
    assert set(shown) == set(subjects)
    for alert_id, (head, subject) in shown.items():
        assert "UTC" in head  # the time is whole, never cut mid-way
        if subject.endswith(ELLIPSIS):
            assert subjects[alert_id].startswith(subject[:-1].rstrip())
        else:
            assert subject == subjects[alert_id]
        assert len(subject) > 40  # the subject keeps its room, it is not squeezed to nothing
    assert any(s.startswith("credit of 77,700.00 NGN") for _, s in shown.values())


def test_at_120_columns_each_alert_reads_whole(subjects: dict[int, str]) -> None:
    out = invoke("alerts", "list", "--width", "120")
    assert max(len(line) for line in out.splitlines()) <= 120
    for alert_id, (head, subject) in blocks(out).items():
        assert head.rstrip().endswith(")") and " UTC (" in head and "opened 20" in head
        assert subject == subjects[alert_id]  # wrapped under its header, nothing lost
    assert ELLIPSIS not in out


def test_a_pipe_gets_one_whole_alert_per_line(subjects: dict[int, str]) -> None:
    out = invoke("alerts", "list")
    header, *rows = out.splitlines()
    assert header.split("\t") == ["id", "severity", "state", "kind", "opened", "subject"]
    by_id = {int(r.split("\t")[0]): r.split("\t") for r in rows}
    assert {k: v[5] for k, v in by_id.items()} == subjects
    assert all(v[4].endswith(" UTC") and "." not in v[4] for v in by_id.values())
    assert ELLIPSIS not in out


def test_the_report_fits_80_columns_and_is_whole_in_a_pipe(subjects: dict[int, str]) -> None:
    narrow = invoke("report", "--width", "80")
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "unmatched (waiting + exceptions)" in narrow
    piped = invoke("report")
    for subject in subjects.values():
        assert subject in piped  # one line each, never folded


def test_a_real_terminal_lays_out_at_its_own_width(
    subjects: dict[int, str], env: dict[str, str]
) -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    child_env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | env
    process = subprocess.run(
        [sys.executable, "-m", "recon", "alerts", "list"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=child_env,
        timeout=120,
        check=False,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end is closed: everything has been read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.returncode == 0, process.stderr.decode()
    out = b"".join(chunks).decode().replace("\r\n", "\n")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert set(blocks(out)) == set(subjects)
