"""The pure decisions of the reconciler: fingerprints, lag, contradictions, policy, windows."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook

from foundation import Secret, load_settings
from reconciliation import ReconcilePolicy
from reconciliation.alerts.lifecycle import FINGERPRINT_MAX, Finding, fingerprint
from reconciliation.alerts.sinks import sign
from reconciliation.drift.balance import explained_by_lag
from reconciliation.drift.contradictions import contradiction
from reconciliation.matching.sql import ranges
from reconciliation.matching.transfer_states import TransferState
from reconciliation.reports import ReportError, parse_moment, parse_window

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_fingerprints_are_readable_when_short_and_stable_when_hashed() -> None:
    assert fingerprint("poller_stuck", "abc") == "poller_stuck:abc"
    long_key = "x" * 300
    hashed = fingerprint("posting_without_notification", long_key)
    assert len(hashed) <= FINGERPRINT_MAX
    assert hashed.startswith("posting_without_notification:sha256:")
    assert hashed == fingerprint("posting_without_notification", long_key)
    assert hashed != fingerprint("posting_without_notification", long_key + "y")


def test_a_finding_refuses_an_unknown_severity() -> None:
    with pytest.raises(ValueError, match="severity"):
        Finding(kind="k", severity="urgent", subject="s", fingerprint="k:1")


@pytest.mark.parametrize(
    ("settled", "posted", "in_grace", "explained"),
    [
        (1_000, 1_000, [], True),  # exact
        (700, 1_000, [300], True),  # the last 300 not projected yet
        (1_000, 1_000, [300], True),  # projected already
        (900, 1_000, [300, -200], True),  # 500 + 300, before the -200 landed
        (800, 1_000, [300], False),  # no prefix of the grace explains 800
        (1_300, 1_000, [300], False),  # more than the ledger ever had
        (1_000, 1_200, [], False),  # nothing in the grace: must be exact
    ],
)
def test_projection_lag_explains_only_prefixes_of_the_grace(
    settled: int, posted: int, in_grace: list[int], explained: bool
) -> None:
    assert explained_by_lag(settled, posted, in_grace) is explained


def _state(status: str, terminal: bool, successful: bool | None) -> TransferState:
    return TransferState(status=status, is_terminal=terminal, is_successful=successful)


#: The same four outcomes under our first names and under another provider's: only
#: isTerminal/isSuccessful decide, and the gateway's own word is the one quoted.
VOCABULARIES = {
    "recon": {
        "settled": _state("completed", True, True),
        "failed": _state("failed", True, False),
        "waiting": _state("awaiting_finality", False, False),
    },
    "alternate": {
        "settled": _state("settled", True, True),
        "failed": _state("rejected", True, False),
        "waiting": _state("held", False, False),
    },
}


@pytest.mark.parametrize("names", sorted(VOCABULARIES))
def test_contradictions(names: str) -> None:
    old, fresh = NOW - timedelta(hours=1), NOW + timedelta(seconds=1)
    cutoff = NOW
    said = VOCABULARIES[names]
    denied = _state("reservation_denied", True, False)
    assert contradiction("TRANSACTION_COMPLETED", said["settled"], old, cutoff) is None
    assert "reservation_denied" in str(
        contradiction("TRANSACTION_COMPLETED", denied, fresh, cutoff)
    )
    failed = said["failed"].status
    assert failed is not None
    assert failed in str(contradiction("PAYMENT_RECEIVED", said["failed"], fresh, cutoff))
    # Still waiting (under any name) is only a contradiction once the grace has passed.
    assert contradiction("TRANSACTION_COMPLETED", said["waiting"], fresh, cutoff) is None
    assert contradiction("TRANSACTION_COMPLETED", said["waiting"], old, cutoff) is not None
    assert contradiction("TRANSACTION_FAILED", said["settled"], fresh, cutoff) is not None
    assert contradiction("TRANSACTION_FAILED", said["failed"], old, cutoff) is None
    # Not read yet: the gateway has said nothing, so nothing contradicts it.
    unread = TransferState(status=None, is_terminal=False, is_successful=None)
    assert contradiction("TRANSACTION_COMPLETED", unread, old, cutoff) is None


def test_policy_from_settings_and_its_checks(base_env: dict[str, str]) -> None:
    settings = load_settings(
        {**base_env, "RECON_MATCH_WINDOW_SECONDS": "120", "RECON_ALERT_CAP_PER_PASS": "7"}
    )
    policy = ReconcilePolicy.from_settings(settings)
    assert (policy.match_window_seconds, policy.alert_cap_per_pass) == (120, 7)
    assert ReconcilePolicy.from_settings(policy) is policy
    with pytest.raises(ValueError, match="alert_cap_per_pass"):
        ReconcilePolicy(alert_cap_per_pass=0)
    with pytest.raises(ValueError, match="RECON_ALERT_WEBHOOK_SECRET"):
        ReconcilePolicy(alert_webhook_url="http://127.0.0.1:1/x")


def test_alert_signatures_verify_with_standard_webhooks() -> None:
    secret = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode().rstrip("=")
    body = b'{"type":"alert.opened"}'
    stamp = int(time.time())
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(Secret(secret), "msg_1", stamp, body),
    }
    assert Webhook(secret).verify(body, headers) == {"type": "alert.opened"}
    with pytest.raises(ValueError, match="whsec_"):
        sign(Secret("plain"), "msg_1", stamp, body)


def test_report_windows() -> None:
    assert parse_moment("2026-11-01", "since") == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_moment("2026-11-01T01:00:00+01:00", "until") == datetime(2026, 11, 1, tzinfo=UTC)
    with pytest.raises(ReportError, match="no time zone"):
        parse_moment("2026-11-01T01:00:00", "until")
    with pytest.raises(ReportError, match="not a date or time"):
        parse_moment("last week", "since")
    window = parse_window(None, None, " abc ", NOW)
    assert (window.since, window.until, window.holding) == (None, NOW, "abc")
    assert parse_window(None, None, "   ", NOW).holding is None


def test_id_ranges_cover_exactly() -> None:
    assert list(ranges(1, 5, 2)) == [(1, 2), (3, 4), (5, 5)]
    assert list(ranges(6, 5, 2)) == []
