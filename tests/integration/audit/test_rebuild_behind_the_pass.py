"""Facts that change behind the live store's last pass: a rebuild judges what that pass judged.

A running store keeps moving between a pass and a rebuild: a posting lands behind a snapshot
already checked (the poller's read ended just after the balance was observed), a transfer the
pass judged turns terminal. Each test builds that moment through recon's own paths and asks
`recon rebuild --dry-run` (the library call behind it) whether the rebuilt state is the live
one; `tests/integration/workers/test_rebuild_while_running.py` meets the same moments by chance,
against the sandbox, and these make them happen every time.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.matching.frontier import watermark_name
from reconciliation.rebuild import run as run_module
from reconciliation.rebuild.run import Mode, rebuild
from reconciliation.store import watermarks
from reconciliation.store.db import transaction
from reconciliation.store.models import (
    ActivityCursor,
    Alert,
    BalanceCheck,
    BalanceSnapshot,
    Match,
    MatchBacklog,
    Notification,
    TransferChange,
)
from reconciliation.transfers.polling import Backoff, claim_due_transfers, record_status
from tests.integration.audit.small_world import (
    POLICY,
    T0,
    build_world,
    delivery_body,
    money_data,
    posting_for,
)
from tests.integration.reconciliation.through_inbox import deliver_through_inbox
from upstream.webhooks.payloads import configured_reader
from upstream.wire.transfers import TransferStatus

READER = configured_reader()

#: The snapshot `build_world` gives the external holding, and its settled amount (its postings'
#: sum).
FIRST_SNAPSHOT_AT = T0 + timedelta(minutes=5)
FIRST_SETTLED = 250_000


def test_a_posting_that_lands_behind_a_checked_snapshot_is_judged_alike(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """The holding's poller caught up just after its snapshot was observed, so the pass checked
    it; a posting made a moment before the snapshot only came with the next read, and by then a
    newer snapshot is ahead of the poller. The last pass's check of the older snapshot takes the
    posting in, as a fresh look at the same facts (the rebuild) does."""
    world = build_world(session_factory)  # its passes checked the first snapshot: no drift
    late = 1_500
    at = world.pass_at + timedelta(seconds=30)
    with transaction(session_factory) as s:
        s.add(
            ActivityCursor(
                holding_id=world.external.id,
                last_polled_at=FIRST_SNAPSHOT_AT + timedelta(seconds=1),
            )
        )
        # Within the projection's grace before the snapshot: the balance had not counted it.
        s.add(
            posting_for(
                world.external,
                uuid.uuid4(),
                "credit",
                late,
                FIRST_SNAPSHOT_AT - timedelta(seconds=2),
            )
        )
        s.add(  # observed after the poller's last read: not judged until it has read past it
            BalanceSnapshot(
                holding_id=world.external.id,
                settled_minor=FIRST_SETTLED + late,
                available_minor=FIRST_SETTLED + late,
                reserved_minor=0,
                observed_at=at,
            )
        )
    run_pass(session_factory, POLICY, now=at + timedelta(seconds=5), publish=False)

    result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert result.comparison is not None and result.horizon is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
    assert result.horizon.unjudged["balance snapshots"] == 1  # the newer one, ahead of the poller
    with session_factory() as s:
        check = s.scalars(
            select(BalanceCheck).where(BalanceCheck.holding_id == world.external.id)
        ).one()
    # The live check says what the stored postings say: the late one is counted, and the
    # difference it makes is the projection's lag.
    assert (check.posted_minor, check.drift_minor) == (FIRST_SETTLED + late, -late)
    assert check.explained_by_lag


def test_each_holding_is_judged_on_the_newest_snapshot_its_own_poller_has_caught_up_with(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """The internal holding's poller has read past its older snapshot, not its newer one (which
    is still older than the external holding's check): the older one is judged, whatever other
    holdings' checks say, and the newer one waits."""
    world = build_world(session_factory)  # the external holding's snapshot is checked
    older, newer = (
        FIRST_SNAPSHOT_AT - timedelta(minutes=2),
        FIRST_SNAPSHOT_AT - timedelta(minutes=1),
    )
    with transaction(session_factory) as s:
        s.add(
            ActivityCursor(
                holding_id=world.internal.id, last_polled_at=older + timedelta(seconds=1)
            )
        )
        for observed in (older, newer):
            s.add(
                BalanceSnapshot(
                    holding_id=world.internal.id,
                    settled_minor=-10_000,
                    available_minor=-10_000,
                    reserved_minor=0,
                    observed_at=observed,
                )
            )
    run_pass(session_factory, POLICY, now=world.pass_at + timedelta(seconds=30), publish=False)

    with session_factory() as s:
        checked = s.scalars(
            select(BalanceCheck.observed_at).where(BalanceCheck.holding_id == world.internal.id)
        )
        assert list(checked) == [older]
    result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)
    assert result.comparison is not None and result.horizon is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
    assert result.horizon.unjudged["balance snapshots"] == 1  # the newer one


def test_a_notification_matched_before_a_pass_saw_it_waits_for_nothing(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """A pass reads each stream's top when it starts; a notification committed just after is
    above its notification top, yet its rule anchored on postings (receiptRef) finds it through
    the new posting and matches the two. The next pass sees the notification as new: it is
    matched already, so it does not join the backlog (where no fresh pass would put it)."""
    world = build_world(session_factory)
    at = world.pass_at + timedelta(seconds=30)
    receipt = uuid.uuid4()
    with transaction(session_factory) as s:
        s.add(posting_for(world.external, receipt, "credit", 2_500, at))
    body = delivery_body(
        "evt-just-after",
        "PAYMENT_RECEIVED",
        at,
        **money_data(world.external, "25.00", receiptRef=receipt),
    )
    deliver_through_inbox(session_factory, [("evt-just-after", body)], at)
    with session_factory() as s:
        seen = watermarks.read(s, watermark_name("notification"), 0)
        note = s.scalars(
            select(Notification).where(Notification.event_id == "evt-just-after")
        ).one()
    assert note.id > seen
    # The first pass's notification top as it was read before the notification was committed.
    run_pass(
        session_factory,
        POLICY,
        now=at + timedelta(seconds=5),
        publish=False,
        ceiling={"notification": seen},
    )
    with session_factory() as s:
        match = s.scalars(select(Match).where(Match.notification_id == note.id)).one()
    assert match.rule == "receipt_ref" and match.unmatched_at is None
    run_pass(session_factory, POLICY, now=at + timedelta(seconds=10), publish=False)

    result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert result.comparison is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
    with session_factory() as s:
        waiting = s.scalars(select(MatchBacklog.item_id).where(MatchBacklog.kind == "notification"))
        assert note.id not in set(waiting)


def test_a_transfer_that_turned_terminal_after_the_pass_is_judged_as_the_pass_saw_it(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """The pass judged a transfer still awaiting finality (past its deadline: an alert); its
    next status read says it completed. Until a pass has judged that, the rebuild judges the
    transfer as the pass saw it, from its status history."""
    world = build_world(session_factory)  # the waiting transfer is overdue: an alert is open
    with session_factory() as s:
        overdue = s.scalars(select(Alert.fingerprint).where(Alert.kind == "finality_overdue"))
        assert list(overdue)
    [claim] = claim_due_transfers(session_factory, "tester", world.pass_at, 10)
    read = TransferStatus(
        transfer_ref=claim.transfer_ref,
        status="completed",
        reason=None,
        is_terminal=True,
        is_successful=True,
        revision=2,
        fees=None,
    )
    at = world.pass_at + timedelta(seconds=20)
    record_status(session_factory, claim, "tester", read, at, Backoff())
    with session_factory() as s:
        change = s.scalars(
            select(TransferChange)
            .where(TransferChange.transfer_id == claim.id)
            .order_by(TransferChange.id.desc())
        ).first()
    assert change is not None and (change.is_terminal, change.is_successful) == (True, True)

    waiting = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert waiting.comparison is not None and waiting.horizon is not None
    assert [d.as_dict() for d in waiting.comparison.differences] == []
    assert waiting.horizon.unjudged["changed transfers"] == 1
    run_pass(session_factory, POLICY, now=at + timedelta(seconds=5), publish=False)
    judged = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)
    assert judged.comparison is not None and judged.horizon is not None
    assert [d.as_dict() for d in judged.comparison.differences] == []
    assert judged.horizon.unjudged["changed transfers"] == 0
    before, after = waiting.comparison.live.by_name(), judged.comparison.live.by_name()
    assert before["open_alerts"] != after["open_alerts"]  # the next pass resolved it


def test_the_rows_shown_are_those_of_the_moment_the_digests_compare(
    engine: Engine, session_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live store moves while the rebuild works on its scratch (a pass, processing); the
    digests compare the moment the facts were read, and the rows listed under a table that
    differs are that moment's too, not rows that changed since."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite has no snapshot to share: its live rows are read as they are now")
    build_world(session_factory)
    receipt_matches = select(Match).where(Match.rule == "receipt_ref", Match.unmatched_at.is_(None))
    with session_factory.begin() as s:
        lost = s.scalars(receipt_matches).first()
        assert lost is not None
        lost_row = (lost.posting_id, lost.notification_id)
        s.delete(lost)  # a difference the rebuild must find
    derive = run_module._derive

    def derive_while_the_store_moves(*args: Any, **kwargs: Any) -> None:
        derive(*args, **kwargs)
        with session_factory.begin() as s:  # after the rebuild read the live store
            s.delete(s.scalars(receipt_matches).first())

    monkeypatch.setattr(run_module, "_derive", derive_while_the_store_moves)

    result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert result.comparison is not None
    [matches] = result.comparison.differences
    assert (matches.name, matches.live_only, matches.rebuilt_only) == ("matches", 0, 1)
    row = matches.rebuilt_sample[0]
    assert (int(row["posting_id"]), int(row["notification_id"])) == lost_row


def test_the_check_compared_is_of_the_newest_snapshot_by_time_whatever_the_ids(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """Two balance reads of one holding overlapped and stored their snapshots in the other
    order: the later observed has the lower id. Each pass checks the newest snapshot its poller
    has caught up with; the live check and the rebuilt one compared are of that snapshot."""
    world = build_world(session_factory)
    later_at, earlier_at = T0 + timedelta(minutes=20), T0 + timedelta(minutes=19)
    with transaction(session_factory) as s:
        for observed in (later_at, earlier_at):  # the later one stored first
            s.add(
                BalanceSnapshot(
                    holding_id=world.external.id,
                    settled_minor=FIRST_SETTLED,
                    available_minor=FIRST_SETTLED,
                    reserved_minor=0,
                    observed_at=observed,
                )
            )
            s.flush()
        cursor = ActivityCursor(
            holding_id=world.external.id, last_polled_at=earlier_at + timedelta(seconds=30)
        )
        s.add(cursor)
    first = world.pass_at + timedelta(minutes=10)
    run_pass(session_factory, POLICY, now=first, publish=False)  # checks the earlier one
    with transaction(session_factory) as s:
        s.get_one(ActivityCursor, world.external.id).last_polled_at = later_at + timedelta(
            seconds=30
        )
    run_pass(session_factory, POLICY, now=first + timedelta(seconds=5), publish=False)

    result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert result.comparison is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
    with session_factory() as s:
        checked = s.scalars(
            select(BalanceCheck.observed_at).where(BalanceCheck.holding_id == world.external.id)
        )
        assert {later_at, earlier_at} <= set(checked)  # both judged, in turn
