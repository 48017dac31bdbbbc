"""balance_mismatch judges again only the holdings whose verdict can have moved.

Every other holding's latest check stands as its verdict. These tests build each way a verdict
can move (a late posting, a snapshot the poller has just read past, a new projection grace) and
check that the pass sees it; that a verdict which stands is still reported, pass after pass,
exactly as it was judged; and that a pass reads the balance rows of the holdings that changed,
not of every holding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event, select, text
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.alerts.lifecycle import OPEN, RESOLVED, fingerprint
from reconciliation.postings import acquire_lease, release_lease
from reconciliation.store.db import make_engine, make_session_factory, transaction
from reconciliation.store.models import ActivityCursor, Alert, Holding
from tests.conftest import postgres_only
from tests.integration.audit.small_world import POLICY
from tests.integration.reconciliation.builders import T0, Store
from tests.integration.retention.plan_capture import explain_everything

SNAPSHOT_AT = T0 + timedelta(minutes=10)


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
    store = Store(session_factory)
    drifting, quiet = store.holding(), store.holding()
    store.posting(drifting, 10_000), store.snapshot(drifting, 15_000, observed=SNAPSHOT_AT)
    store.posting(quiet, 7_000), store.snapshot(quiet, 7_000, observed=SNAPSHOT_AT)
    _pass(session_factory, 11)
    first = _alert(session_factory, drifting)
    assert first is not None and first.state == OPEN
    assert first.evidence["postedMinor"] == "10000" and first.evidence["driftMinor"] == "5000"

    # Postings after every snapshot: nothing moves.
    store.posting(drifting, 1_000, posted=T0 + timedelta(minutes=12))
    store.posting(quiet, 2_000, posted=T0 + timedelta(minutes=12))
    second_at = _pass(session_factory, 13)
    second = _alert(session_factory, drifting)
    assert second is not None and second.state == OPEN
    assert (second.id, second.evidence, second.subject) == (first.id, first.evidence, first.subject)
    assert second.last_seen_at == second_at
    assert _alert(session_factory, quiet) is None

    store.snapshot(drifting, 11_000, observed=T0 + timedelta(minutes=14))  # it agrees now
    _pass(session_factory, 15)
    third = _alert(session_factory, drifting)
    assert third is not None and third.state == RESOLVED


def test_a_posting_behind_a_standing_check_moves_its_verdict(
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    holding = store.holding()
    store.posting(holding, 10_000), store.snapshot(holding, 10_000, observed=SNAPSHOT_AT)
    _pass(session_factory, 11)
    assert _alert(session_factory, holding) is None
    # Found late, well before the snapshot's grace.
    store.posting(holding, 3_000, posted=T0 + timedelta(minutes=1))
    _pass(session_factory, 12)
    alert = _alert(session_factory, holding)
    assert alert is not None and alert.state == OPEN
    assert (alert.evidence["postedMinor"], alert.evidence["driftMinor"]) == ("13000", "-3000")


def test_a_snapshot_is_judged_once_its_poller_reads_past_it_with_nothing_else_new(
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    holding = store.holding()
    store.cursor(holding, polled=SNAPSHOT_AT - timedelta(minutes=1))
    store.posting(holding, 10_000), store.snapshot(holding, 12_000, observed=SNAPSHOT_AT)
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
    store = Store(session_factory)
    holding = store.holding()
    store.posting(holding, 10_000)
    # Ten seconds before the snapshot: inside a 60 s grace, the balance may not count it.
    store.posting(holding, 500, posted=SNAPSHOT_AT - timedelta(seconds=10))
    store.snapshot(holding, 10_000, observed=SNAPSHOT_AT)
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
    store = Store(session_factory)
    holdings = [store.holding() for _ in range(3)]
    for h in holdings:
        store.posting(h, 10_000), store.snapshot(h, 10_000, observed=SNAPSHOT_AT)
    with _basis_reads(engine) as first:
        _pass(session_factory, 11)
    assert len(first) == 1
    for h in holdings:
        store.posting(h, 1_000, posted=T0 + timedelta(minutes=12))
    with _basis_reads(engine) as second:
        _pass(session_factory, 13)
    assert second == []
    store.posting(holdings[1], 1_000, posted=T0 + timedelta(minutes=2))
    with _basis_reads(engine) as third:
        _pass(session_factory, 14)
    assert len(third) == 1
    assert _alert(session_factory, holdings[1]) is not None
    assert _alert(session_factory, holdings[0]) is None


def _balance_rows_of_a_pass(
    engine: Engine, factory: sessionmaker[Session], minutes: float
) -> Counter[str]:
    """Rows of holdings and the balance tables that the balance statements of one pass read,
    after fresh statistics (as a running store's would be), by table."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
    plans = explain_everything(engine, analyze=True)
    _pass(factory, minutes)
    read: Counter[str] = Counter()
    for explained in plans.explained:
        if "balance_" in explained.statement:
            read.update(explained.rows_read)
    return Counter({t: read[t] for t in ("holdings", "balance_snapshots", "balance_checks")})


#: Holdings in the store whose pass must not read them all, and what one pass may read of the
#: balance tables for the one that changed (its probes and its sum's, a few rows each).
MANY = 1000
ONE_HOLDINGS_ROWS = 20


@postgres_only
def test_a_pass_reads_the_balance_rows_of_the_holding_that_changed_not_of_every_holding(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    try:
        factory = make_session_factory(engine)
        store = Store(factory)
        holdings = [store.holding(locator=False) for _ in range(MANY)]
        for h in holdings:
            store.posting(h, 10_000), store.snapshot(h, 10_000, observed=SNAPSHOT_AT)
        _pass(factory, 11)  # every holding judged
        _pass(factory, 12)  # and the rows that pass saw looked at once more (one read back)
        changed = holdings[MANY // 2]
        store.snapshot(changed, 12_000, observed=T0 + timedelta(minutes=13))
        read = _balance_rows_of_a_pass(engine, factory, 14)
        assert sum(read.values()) <= ONE_HOLDINGS_ROWS, read
        alert = _alert(factory, changed)
        assert alert is not None and alert.evidence["driftMinor"] == "2000"  # it was judged
        assert _alert(factory, holdings[0]) is None
    finally:
        engine.dispose()


@postgres_only
def test_holdings_waiting_for_their_poller_are_not_read_again_until_a_read_passes_them(
    db_url: str,
) -> None:
    """With a snapshot after every read, nearly every holding waits for its poller to read past
    its newest snapshot: a pass must not look at them all again, pass after pass, but at the
    one whose read has just been released past its snapshot, and judge it."""
    engine = make_engine(db_url)
    try:
        factory = make_session_factory(engine)
        store = Store(factory)
        holdings = [store.holding(locator=False) for _ in range(MANY)]
        read_past = holdings[MANY // 2]
        for h in holdings:
            store.cursor(h, polled=SNAPSHOT_AT - timedelta(minutes=1))
            store.posting(h, 10_000)
            store.snapshot(h, 12_000 if h is read_past else 10_000, observed=SNAPSHOT_AT)
        _pass(factory, 11)  # every holding looked at: its snapshot is new, and waits
        _pass(factory, 12)  # the rows that pass saw looked at once more (one read back)
        assert _alert(factory, read_past) is None  # undecided: its poller is behind it
        lease = acquire_lease(factory, read_past.id, "reader", SNAPSHOT_AT + timedelta(minutes=1))
        assert lease is not None
        release_lease(
            factory, lease, None, caught_up_at=SNAPSHOT_AT + timedelta(seconds=30), completed=True
        )
        read = _balance_rows_of_a_pass(engine, factory, 14)
        assert sum(read.values()) <= ONE_HOLDINGS_ROWS, read
        alert = _alert(factory, read_past)
        assert alert is not None and alert.evidence["driftMinor"] == "2000"  # judged, at last
        assert _alert(factory, holdings[0]) is None  # still waiting: undecided
    finally:
        engine.dispose()
