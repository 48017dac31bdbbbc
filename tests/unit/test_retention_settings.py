"""Retention ages: decimal days (minutes for tests and soaks), limits for the reconciled facts."""

from __future__ import annotations

import pytest

from foundation import ConfigError, load_settings

AGES = (
    "RECON_RETAIN_DELIVERIES_DAYS",
    "RECON_RETAIN_OUTBOUND_REQUESTS_DAYS",
    "RECON_RETAIN_SNAPSHOTS_DAYS",
    "RECON_RETAIN_TRANSFER_HISTORY_DAYS",
    "RECON_RETAIN_RESOLVED_ALERTS_DAYS",
    "RECON_RETAIN_POSTINGS_DAYS",
    "RECON_RETAIN_TRANSFERS_DAYS",
    "RECON_RETAIN_NOTIFICATIONS_DAYS",
    "RECON_RETAIN_MATCHES_DAYS",
)


def test_reconciled_facts_are_kept_for_good_unless_a_limit_is_set(
    base_env: dict[str, str],
) -> None:
    kept = load_settings(base_env).retention
    assert (kept.posting_days, kept.transfer_days, kept.notification_days, kept.match_days) == (
        None,
        None,
        None,
        None,
    )
    assert (kept.delivery_days, kept.outbound_request_days) == (90.0, 7.0)
    limited = load_settings(
        base_env
        | {
            "RECON_RETAIN_POSTINGS_DAYS": "400",
            "RECON_RETAIN_TRANSFERS_DAYS": "400.5",
            "RECON_RETAIN_NOTIFICATIONS_DAYS": "365",
            "RECON_RETAIN_MATCHES_DAYS": "366",
        }
    ).retention
    assert (limited.posting_days, limited.transfer_days) == (400.0, 400.5)
    assert (limited.notification_days, limited.match_days) == (365.0, 366.0)


@pytest.mark.parametrize("name", AGES)
def test_every_age_takes_a_fraction_of_a_day(base_env: dict[str, str], name: str) -> None:
    settings = load_settings(base_env | {name: "0.01"}).retention
    assert 0.01 in {getattr(settings, f) for f in settings.__slots__}


@pytest.mark.parametrize("value", ["0", "-1", "ten", "nan", "inf", "1e9", "0x10"])
def test_a_bad_age_says_what_is_accepted(base_env: dict[str, str], value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(base_env | {"RECON_RETAIN_POSTINGS_DAYS": value})
    assert str(info.value).strip() == (
        f"RECON_RETAIN_POSTINGS_DAYS={value!r} is not valid: expected a number of days > 0, "
        "decimals allowed (e.g. 90, or 0.01 for about 15 minutes)"
    )
