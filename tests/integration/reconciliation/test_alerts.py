"""Alert life cycle on both databases: dedup, open -> acknowledged -> resolved, auto-resolve,
reopen, the per-pass cap with its one summary alert."""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.alerts.lifecycle import (
    AlertError,
    AlertNotFoundError,
    acknowledge_alert,
    list_alerts,
    raise_alert,
    resolve_alert,
)
from reconciliation.store.models import Alert, Transfer
from tests.conftest import postgres_only
from tests.integration.reconciliation.builders import Store, at
from tests.waiting import another_session, wait_until

POLICY = ReconcilePolicy(finality_deadline_seconds=600, alert_cap_per_pass=2)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def overdue(store: Store, count: int = 1) -> list[Transfer]:
    source, dest = store.holding(locator=False), store.holding(locator=False)
    return [
        store.transfer(source, dest, 100 + i, status="awaiting_finality", requested=at(0))
        for i in range(count)
    ]


def settle(store: Store, transfer: Transfer, status: str = "completed") -> None:
    terminal = status != "awaiting_finality"
    with store.factory.begin() as s:
        s.execute(
            update(Transfer)
            .where(Transfer.id == transfer.id)
            .values(status=status, is_terminal=terminal, is_successful=status == "completed")
        )


def alerts(store: Store) -> list[Alert]:
    with store.factory() as s:
        return list(s.scalars(select(Alert).order_by(Alert.id)))


def test_the_same_fingerprint_is_one_alert(store: Store) -> None:
    for _ in range(3):
        with store.factory.begin() as s:
            raise_alert(
                s, kind="k", severity="high", subject="s", fingerprint="k:1", evidence={"n": 1}
            )
    [alert] = alerts(store)
    assert alert.occurrences == 3
    assert alert.state == "open"


def test_a_person_acknowledges_then_resolves(store: Store) -> None:
    with store.factory.begin() as s:
        alert_id = raise_alert(
            s, kind="k", severity="low", subject="s", fingerprint="k:2", evidence={}
        ).id
    with store.factory.begin() as s:
        acknowledge_alert(s, alert_id, by="ana", note="looking")
        acknowledge_alert(s, alert_id, by="bo")  # harmless: the first owner stays
    with store.factory.begin() as s:
        resolve_alert(s, alert_id, by="ana", note="fixed upstream")
    [alert] = alerts(store)
    assert (alert.state, alert.acknowledged_by, alert.resolved_by) == ("resolved", "ana", "ana")
    assert alert.note == "fixed upstream"
    with pytest.raises(AlertError, match="already resolved"), store.factory.begin() as s:
        acknowledge_alert(s, alert_id, by="ana")
    with pytest.raises(AlertNotFoundError, match="no alert has id 999"), store.factory() as s:
        resolve_alert(s, 999, by="ana")
    with pytest.raises(AlertError, match="say who you are"), store.factory() as s:
        resolve_alert(s, alert_id, by="  ")


def test_list_filters_by_state_and_puts_the_urgent_first(store: Store) -> None:
    with store.factory.begin() as s:
        for i, severity in enumerate(("low", "critical", "medium")):
            raise_alert(
                s, kind="k", severity=severity, subject="s", fingerprint=f"k:{i}", evidence={}
            )
        resolve_alert(s, 1, by="ana")
    with store.factory() as s:
        assert [a.severity for a in list_alerts(s, state="active")] == ["critical", "medium"]
        assert [a.id for a in list_alerts(s, state="resolved")] == [1]
        with pytest.raises(AlertError, match="not one of"):
            list_alerts(s, state="closed")


def test_a_cleared_condition_resolves_itself_and_reopens_when_it_returns(store: Store) -> None:
    [transfer] = overdue(store)
    run_pass(store.factory, POLICY, now=at(700), publish=False)
    [alert] = alerts(store)
    assert (alert.kind, alert.state) == ("finality_overdue", "open")

    settle(store, transfer)
    result = run_pass(store.factory, POLICY, now=at(730), publish=False)
    [alert] = alerts(store)
    assert (alert.state, alert.resolved_by) == ("resolved", "recon")
    assert [c.alert_id for c in result.alerts.resolved] == [alert.id]

    settle(store, transfer, "awaiting_finality")  # say a status read is corrected back
    result = run_pass(store.factory, POLICY, now=at(760), publish=False)
    [alert] = alerts(store)
    assert (alert.state, alert.occurrences, alert.resolved_at) == ("open", 2, None)
    assert [c.alert_id for c in result.alerts.reopened] == [alert.id]


def test_a_person_resolving_sticks_until_the_condition_clears_and_returns(store: Store) -> None:
    [transfer] = overdue(store)
    run_pass(store.factory, POLICY, now=at(700), publish=False)
    with store.factory.begin() as s:
        resolve_alert(s, alerts(store)[0].id, by="ana", note="rail confirmed by phone")

    run_pass(store.factory, POLICY, now=at(730), publish=False)
    assert alerts(store)[0].state == "resolved"  # still overdue, but a person dealt with it

    settle(store, transfer)
    run_pass(store.factory, POLICY, now=at(760), publish=False)
    settle(store, transfer, "awaiting_finality")
    run_pass(store.factory, POLICY, now=at(790), publish=False)
    assert alerts(store)[0].state == "open"  # a new occurrence


def test_the_cap_holds_back_a_storm_behind_one_summary_alert(store: Store) -> None:
    overdue(store, 5)

    first = run_pass(store.factory, POLICY, now=at(700), publish=False)
    assert len(first.alerts.opened) == 2
    assert first.alerts.suppressed == 3
    storm = [a for a in alerts(store) if a.kind == "alert_storm"]
    assert len(storm) == 1
    assert storm[0].evidence["held_back"] == 3
    assert storm[0].evidence["by_kind"] == {"finality_overdue": 3}

    second = run_pass(store.factory, POLICY, now=at(730), publish=False)
    assert (len(second.alerts.opened), second.alerts.suppressed) == (2, 1)
    third = run_pass(store.factory, POLICY, now=at(760), publish=False)
    assert (len(third.alerts.opened), third.alerts.suppressed) == (1, 0)
    by_kind = {(a.kind, a.state) for a in alerts(store)}
    assert by_kind == {("finality_overdue", "open"), ("alert_storm", "resolved")}
    assert len([a for a in alerts(store) if a.kind == "finality_overdue"]) == 5


@postgres_only  # SQLite serialises writers: the race exists only on PostgreSQL
def test_two_writers_opening_one_alert_at_once_make_one_alert(
    session_factory: sessionmaker[Session], engine: Engine
) -> None:
    """The loser of the race refreshes the winner's row; its own transaction goes on."""
    first_inserted = threading.Event()
    results: list[str] = []

    def first() -> None:
        with session_factory.begin() as s:
            raise_alert(s, kind="k", severity="low", subject="one", fingerprint="race", evidence={})
            first_inserted.set()
            # Hold the uncommitted row until the second writer has run into it.
            wait_until(
                lambda: another_session(engine, "wait_event_type = 'Lock'"),
                seconds=10,
                what="the second writer to wait for the first",
            )
        results.append("first")

    def second() -> None:
        first_inserted.wait(5)
        with session_factory.begin() as s:
            raise_alert(s, kind="k", severity="low", subject="two", fingerprint="race", evidence={})
            s.add(Transfer(transfer_ref=uuid.uuid4(), origin="created"))
        results.append("second")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == ["first", "second"]
    (alert,) = alerts(Store(session_factory))
    assert alert.occurrences == 2
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(Transfer)) == 1
