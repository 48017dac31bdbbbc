"""Routine commands print their answer and nothing else; a typo in a kind is refused.

Run as a person runs them, in a subprocess with pipes: a log line on stderr would show in
their terminal next to the answer. The store holds one real drift (a posting never notified),
so `recon reconcile` opens an alert and `recon alerts ack` changes one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from foundation import moment
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.builders import Store

#: One person-facing time: '2026-11-23 20:13:50 UTC'.
PERSON_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
#: What the other time forms looked like: '...:21Z', or ISO with microseconds and an offset.
OTHER_TIMES = re.compile(r"\d\d:\d\d:\d\dZ|\d\d:\d\d:\d\d\.\d+|T\d\d:\d\d:\d\d")


def _recon(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_routine_actions_print_only_their_answer(
    base_env: dict[str, str], db_url: str, session_factory: sessionmaker[Session]
) -> None:
    env = {**base_env, "DATABASE_URL": db_url, "RECON_NOTIFICATION_GRACE_SECONDS": "1"}
    store = Store(session_factory)
    store.posting(store.holding(), 1_234, posted=utcnow() - timedelta(hours=1))

    reconciled = _recon(env, "reconcile")
    assert reconciled.returncode == 0, reconciled.stderr
    assert reconciled.stderr == ""
    assert "alerts opened: 1" in reconciled.stdout, reconciled.stdout
    assert "posting_without_notification" in reconciled.stdout

    listed = _recon(env, "alerts", "list")
    assert listed.returncode == 0 and listed.stderr == ""
    alert_id = listed.stdout.splitlines()[1].split("\t")[0]
    for action in ("ack", "resolve"):
        done = _recon(env, "alerts", action, alert_id, "--by", "ana", "--note", "seen")
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", done.stderr
        assert done.stdout.strip().startswith(f"alert {alert_id} is ")

    # With --verbose the same change is in the log, at info, on stderr only.
    reopened = _recon(env, "--verbose", "alerts", "ack", alert_id, "--by", "ana", "--note", "x")
    assert reopened.returncode == 2  # resolved alerts cannot be acknowledged
    assert "already resolved" in reopened.stderr


def test_a_kind_recon_never_raises_is_refused_with_the_list(
    base_env: dict[str, str], db_url: str
) -> None:
    env = {**base_env, "DATABASE_URL": db_url}
    typo = _recon(env, "alerts", "list", "--kind", "amount-mismatch")
    assert typo.returncode == 2
    assert "did you mean amount_mismatch?" in typo.stderr
    assert "balance_mismatch" in typo.stderr and "delivery_body_conflict" in typo.stderr
    known = _recon(env, "alerts", "list", "--kind", "amount_mismatch")
    assert (known.returncode, known.stdout.strip()) == (0, "no alerts")


def test_inbox_times_read_the_same_as_every_other_time(
    base_env: dict[str, str], db_url: str, session_factory: sessionmaker[Session]
) -> None:
    env = {**base_env, "DATABASE_URL": db_url}
    row = Store(session_factory).delivery("evt-1", b'{"id": "evt-1"}', received=utcnow())
    listed = _recon(env, "deliveries", "list")
    shown = _recon(env, "deliveries", "show", str(row.id))
    for result in (listed, shown):
        assert result.returncode == 0, result.stderr
        assert moment(row.received_at) in result.stdout
        assert PERSON_TIME.search(result.stdout)
        assert not OTHER_TIMES.search(result.stdout), result.stdout
