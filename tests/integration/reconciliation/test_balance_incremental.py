"""balance_mismatch judges again only the holdings whose verdict can have moved.

Every other holding's latest check stands as its verdict. These tests build each way a verdict
can move (a late posting, a snapshot the poller has just read past, a new projection grace) and
check that the pass sees it; and that a verdict which stands is still reported, pass after pass,
exactly as it was judged.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.alerts.lifecycle import OPEN, RESOLVED, fingerprint
from reconciliation.reconcile import run_pass
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Alert, BalanceSnapshot, Holding
from tests.integration.audit.small_world import POLICY, T0, posting_for

SNAPSHOT_AT = T0 + timedelta(minutes=10)


def _holding(s: Session) -> Holding:
    holding = Holding(
        account_ref=uuid.uuid4(),
        endpoint_ref=uuid.uuid4(),
        holding_ref=uuid.uuid4(),
        currency="NGN",
    )
    s.add(holding)
    s.flush()
    return holding


def _snapshot(holding: Holding, settled: int, at: datetime) -> BalanceSnapshot:
    return BalanceSnapshot(
        holding_id=holding.id,
        settled_minor=settled,
        available_minor=settled,
        reserved_minor=0,
        observed_at=at,
    )


def _credit(holding: Holding, amount: int, at: datetime) -> Any:
    return posting_for(holding, uuid.uuid4(), "credit", amount, at)


def _alert(sessions: sessionmaker[Session], holding: Holding) -> Alert | None:
    with sessions() as s:
        return s.scalars(
            select(Alert).where(
                Alert.fingerprint == fingerprint("balance_mismatch", str(holding.holding_ref))
            )
        ).one_or_none()


def _pass(sessions: sessionmaker[Session], minutes: float, **policy: Any) -> datetime:
    now = T0 + timedelta(minutes=minutes)
    run_pass(sessions, replace(POLICY, **policy), now=now, publish=False)
    return now


@contextmanager
def _basis_reads(engine: Engine) -> Iterator[list[str]]:
    """The statements that build the per-holding sums' bases (one per read that sums)."""
    seen: list[str] = []

    def note(_c: Any, _cur: Any, statement: str, *_args: Any) -> None:
        if "balance_basis" in statement and "CREATE" in statement.upper():
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def test_a_standing_drift_is_reported_every_pass_as_judged_until_a_snapshot_agrees(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as s:
        drifting, quiet = _holding(s), _holding(s)
        s.add_all([_credit(drifting, 10_000, T0), _snapshot(drifting, 15_000, SNAPSHOT_AT)])
        s.add_all([_credit(quiet, 7_000, T0), _snapshot(quiet, 7_000, SNAPSHOT_AT)])
    _pass(session_factory, 11)
    first = _alert(session_factory, drifting)
    assert first is not None and first.state == OPEN
    assert first.evidence["postedMinor"] == "10000" and first.evidence["driftMinor"] == "5000"

    with transaction(session_factory) as s:  # postings after every snapshot: nothing moves
        s.add_all([_credit(drifting, 1_000, T0 + timedelta(minutes=12))])
        s.add_all([_credit(quiet, 2_000, T0 + timedelta(minutes=12))])
    second_at = _pass(session_factory, 13)
    second = _alert(session_factory, drifting)
    assert second is not None and second.state == OPEN
    assert (second.id, second.evidence, second.subject) == (first.id, first.evidence, first.subject)
    assert second.last_seen_at == second_at
    assert _alert(session_factory, quiet) is None

    with transaction(session_factory) as s:  # the provider's balance now says 11,000 too
        s.add(_snapshot(drifting, 11_000, T0 + timedelta(minutes=14)))
    _pass(session_factory, 15)
    third = _alert(session_factory, drifting)
    assert third is not None and third.state == RESOLVED


def test_a_posting_behind_a_standing_check_moves_its_verdict(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as s:
        holding = _holding(s)
        s.add_all([_credit(holding, 10_000, T0), _snapshot(holding, 10_000, SNAPSHOT_AT)])
    _pass(session_factory, 11)
    assert _alert(session_factory, holding) is None
    with transaction(session_factory) as s:  # found late, well before the snapshot's grace
        s.add(_credit(holding, 3_000, T0 + timedelta(minutes=1)))
    _pass(session_factory, 12)
    alert = _alert(session_factory, holding)
    assert alert is not None and alert.state == OPEN
    assert (alert.evidence["postedMinor"], alert.evidence["driftMinor"]) == ("13000", "-3000")


def test_a_snapshot_is_judged_once_its_poller_reads_past_it_with_nothing_else_new(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as s:
        holding = _holding(s)
        s.add(
            ActivityCursor(holding_id=holding.id, last_polled_at=SNAPSHOT_AT - timedelta(minutes=1))
        )
        s.add_all([_credit(holding, 10_000, T0), _snapshot(holding, 12_000, SNAPSHOT_AT)])
    _pass(session_factory, 11)
    assert _alert(session_factory, holding) is None  # undecided: the poller is behind it
    with transaction(session_factory) as s:
        cursor = s.get(ActivityCursor, holding.id)
        assert cursor is not None
        cursor.last_polled_at = SNAPSHOT_AT + timedelta(seconds=30)
    _pass(session_factory, 12)
    alert = _alert(session_factory, holding)
    assert alert is not None and alert.evidence["driftMinor"] == "2000"


def test_a_changed_projection_grace_judges_every_standing_check_again(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as s:
        holding = _holding(s)
        # Ten seconds before the snapshot: inside a 60 s grace, the balance may not count it.
        s.add_all(
            [
                _credit(holding, 10_000, T0),
                _credit(holding, 500, SNAPSHOT_AT - timedelta(seconds=10)),
                _snapshot(holding, 10_000, SNAPSHOT_AT),
            ]
        )
    _pass(session_factory, 11, projection_grace_seconds=60)
    assert _alert(session_factory, holding) is None
    _pass(session_factory, 12, projection_grace_seconds=60)
    assert _alert(session_factory, holding) is None
    _pass(session_factory, 13, projection_grace_seconds=5)
    alert = _alert(session_factory, holding)
    assert alert is not None and alert.evidence["projectionGraceSeconds"] == 5


def test_a_pass_after_postings_past_every_check_sums_no_holding_again(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    with transaction(session_factory) as s:
        holdings = [_holding(s) for _ in range(3)]
        for h in holdings:
            s.add_all([_credit(h, 10_000, T0), _snapshot(h, 10_000, SNAPSHOT_AT)])
    with _basis_reads(engine) as first:
        _pass(session_factory, 11)
    assert len(first) == 1
    with transaction(session_factory) as s:
        s.add_all([_credit(h, 1_000, T0 + timedelta(minutes=12)) for h in holdings])
    with _basis_reads(engine) as second:
        _pass(session_factory, 13)
    assert second == []
    with transaction(session_factory) as s:
        s.add(_credit(holdings[1], 1_000, T0 + timedelta(minutes=2)))
    with _basis_reads(engine) as third:
        _pass(session_factory, 14)
    assert len(third) == 1
    assert _alert(session_factory, holdings[1]) is not None
    assert _alert(session_factory, holdings[0]) is None
