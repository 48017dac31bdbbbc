"""One name for a holding: what `find_holdings` reads, and alert subjects built from the store.

The resolver is the one door every surface uses (CLI `--holding`, the API, the console), so its
readings are pinned here on both databases (a holdingRef's first digits are a range over a UUID
column, stored natively on PostgreSQL and as text on SQLite). An alert subject names the
holding by its account from the stored locator, so it reads the same in every pass (and in a
rebuild, which copies the locators), and follows when the account becomes known.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.postings.holding_identity import (
    HoldingLookupError,
    find_holdings,
    holding_identities,
    resolve_holding,
)
from reconciliation.store.models import Alert, Locator
from tests.integration.reconciliation.builders import Store, at

DAY = 86_400
POLICY = ReconcilePolicy(notification_grace_seconds=300, projection_grace_seconds=60)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def test_a_holding_is_found_by_its_number_a_part_of_its_name_or_its_ref(store: Store) -> None:
    ada = store.holding(name="Ada 100% Stores_Ltd")
    store.holding(name="Bola Trading")
    store.holding(name="Bola Foods")
    unnamed = store.holding(locator=False)
    number, ref = store.numbers[ada.id], str(ada.holding_ref)
    with store.factory() as s:
        for asked in (
            number,
            f"  {number} ",
            "100% stores",  # a % or _ is the character itself, not a wildcard
            "STORES_LTD",
            f"{number} Ada 100% Stores_Ltd",  # the label, pasted from a report
            ref,
            ref.upper(),
            ref.replace("-", ""),
            ref[:8],
            ref[:13],  # a prefix across the first hyphen
            f"ref {ref[:8]}",
        ):
            assert [h.ref for h in find_holdings(s, asked)] == [ref], asked
        assert {h.account_name for h in find_holdings(s, "bola")} == {"Bola Trading", "Bola Foods"}
        # Were % and _ wildcards, both would find Ada ("ada", "100% stores").
        assert find_holdings(s, "a_a") == [] and find_holdings(s, "%stores") == []
        assert find_holdings(s, "") == [] and find_holdings(s, str(uuid.uuid4())) == []

        short = str(unnamed.holding_ref)[:8]
        found = resolve_holding(s, f"ref {short}")
        assert (found.label, found.named, found.holding_id) == (f"ref {short}", False, unnamed.id)
        with pytest.raises(HoldingLookupError, match=r"'bola' matches 2 holdings \(.*Bola"):
            resolve_holding(s, "bola")
        with pytest.raises(HoldingLookupError, match="no holding matches 'nobody'"):
            resolve_holding(s, "nobody")
        with pytest.raises(HoldingLookupError, match="no holding named"):
            resolve_holding(s, "   ")

        # Every ref asked for is answered, a ref no holding has with its fallback.
        stranger = str(uuid.uuid4())
        named = holding_identities(s, [ref, stranger, "(unknown)"])
        assert named[ref].label == f"{number} Ada 100% Stores_Ltd"
        assert named[stranger].label == f"ref {stranger[:8]}"
        assert named[stranger].holding_id is None
        assert named["(unknown)"].label == "(unknown)"


def test_an_alert_names_its_holding_by_account_once_it_is_known(store: Store) -> None:
    holding = store.holding(locator=False)
    store.posting(holding, 10_000, posted=at(-DAY))
    store.snapshot(holding, 11_000, observed=at(-600))  # drifts by 100.00 NGN
    run_pass(store.factory, POLICY, now=at(0), publish=False)
    short = str(holding.holding_ref)[:8]
    with store.factory() as s:
        first = s.scalars(select(Alert).where(Alert.kind == "balance_mismatch")).one()
    assert first.subject.startswith(f"holding ref {short}: balance 110.00 NGN")

    # The endpoint register is read: the holding's account becomes known. The next pass says
    # so in the same alert (its evidence names the account, so the subject is rebuilt).
    with store.factory.begin() as s:
        s.add(
            Locator(
                holding_id=holding.id,
                locator_ref=uuid.uuid4(),
                form="nigerian_bank_account",
                display="000:2000000001:Chidi Okafor",
                bank_code="000",
                account_number="2000000001",
                account_name="Chidi Okafor",
            )
        )
    run_pass(store.factory, POLICY, now=at(60), publish=False)
    with store.factory() as s:
        alert = s.scalars(select(Alert).where(Alert.kind == "balance_mismatch")).one()
    assert alert.id == first.id
    assert alert.subject.startswith("holding 2000000001 Chidi Okafor: balance 110.00 NGN")
    assert (alert.evidence["accountNumber"], alert.evidence["holdingRef"]) == (
        "2000000001",
        str(holding.holding_ref),
    )

    # Nothing changed since: the next pass writes the very same subject.
    run_pass(store.factory, POLICY, now=at(120) + timedelta(seconds=1), publish=False)
    with store.factory() as s:
        again = s.scalars(select(Alert).where(Alert.kind == "balance_mismatch")).one()
    assert (again.subject, again.evidence) == (alert.subject, alert.evidence)
