"""`recon rebuild`: the derived state recomputed from the facts equals the live one, or the
difference is listed row by row; `--swap` and `--dry-run` do what they say; digests tell states
apart at a glance.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.notifications.processing import process_deliveries
from reconciliation.rebuild import scratch as scratch_store
from reconciliation.rebuild.digest import state_digest
from reconciliation.rebuild.run import Mode, RebuildResult, rebuild
from reconciliation.store.db import make_session_factory, transaction
from reconciliation.store.models import (
    Alert,
    BalanceSnapshot,
    Delivery,
    Match,
    Notification,
    Transfer,
)
from tests.integration.audit.small_world import POLICY, T0, World, build_world, posting_for
from upstream.webhooks.payloads import PayloadReader, configured_reader

READER = configured_reader()


def live_digest(engine: Engine) -> dict[str, str]:
    with engine.connect() as connection:
        return state_digest(connection).by_name()


def test_rebuild_reproduces_the_live_state_exactly(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    world = build_world(session_factory)
    before = live_digest(engine)

    result = rebuild(engine, POLICY, READER, mode=Mode.KEEP)

    assert result.comparison is not None
    assert result.as_of == world.pass_at  # judged as of the live store's last pass
    assert [d.as_dict() for d in result.comparison.differences] == []
    assert result.comparison.rebuilt.overall == result.comparison.live.overall
    # the world really holds what a rebuild must derive: not an empty comparison
    tables = result.comparison.live.by_name()
    for name in ("notifications", "deliveries", "matches", "exceptions", "open_alerts"):
        assert not tables[name].startswith("0:"), name
    assert result.inbox.quarantined == 1  # the body no shape reads (the other body: intake's)
    assert live_digest(engine) == before  # the live store was only read
    kept = scratch_store.scratch_for(engine)
    assert scratch_store.exists(kept)  # kept for inspection
    scratch_store.drop(kept)
    assert not scratch_store.exists(kept)


def test_differences_are_listed_and_swap_puts_the_live_state_right(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    build_world(session_factory)
    with session_factory.begin() as s:
        auto = s.scalars(select(Match).where(Match.rule == "receipt_ref")).first()
        assert auto is not None
        lost_match = (auto.rule, auto.posting_id, auto.notification_id)
        s.delete(auto)
        note = s.scalars(select(Notification).where(Notification.event_id == "evt-window")).one()
        note.amount_minor = 1
        s.execute(update(Alert).where(Alert.kind == "amount_mismatch").values(state="resolved"))

    found = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert found.comparison is not None
    differences = {d.name: d for d in found.comparison.differences}
    assert set(differences) == {"notifications", "matches", "open_alerts"}
    matches = differences["matches"]
    assert (matches.live_only, matches.rebuilt_only) == (0, 1)
    row = matches.rebuilt_sample[0]
    assert (row["rule"], int(row["posting_id"]), int(row["notification_id"])) == lost_match
    notes = differences["notifications"]
    assert (notes.live_only, notes.rebuilt_only) == (1, 1)
    assert notes.live_sample[0]["amount_minor"] == "1"
    assert notes.rebuilt_sample[0]["amount_minor"] == "30000"
    assert differences["open_alerts"].rebuilt_sample[0]["kind"] == "amount_mismatch"
    assert not scratch_store.exists(scratch_store.scratch_for(engine))  # dry run: dropped

    swapped = rebuild(engine, POLICY, READER, mode=Mode.SWAP)

    assert swapped.after_swap is not None and swapped.comparison is not None
    assert swapped.after_swap.overall == swapped.comparison.rebuilt.overall
    assert swapped.swapped is not None and swapped.swapped["matches"] == 1
    with session_factory() as s:
        alert = s.scalars(select(Alert).where(Alert.kind == "amount_mismatch")).one()
        assert (alert.state, alert.occurrences) == ("open", 2)  # reopened, history kept
    again = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)
    assert again.comparison is not None and again.comparison.same


def test_digest_is_equal_for_equal_states_and_moves_with_one_row(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    build_world(session_factory)
    first, second = live_digest(engine), live_digest(engine)
    assert first == second
    with session_factory.begin() as s:
        match = s.scalars(select(Match).where(Match.unmatched_at.is_(None))).first()
        assert match is not None
        match.rule = "manual"
    changed = live_digest(engine)
    assert changed["matches"] != first["matches"]
    assert {k: v for k, v in changed.items() if k != "matches"} == {
        k: v for k, v in first.items() if k != "matches"
    }


#: Text that must survive being written through COPY's text format: its escapes, its separator,
#: a backslash sequence COPY would read as an escape, text outside ASCII.
AWKWARD = "tab\there, line\nnext, return\r, back\\slash, \\N, caf\u00e9"


def add_awkward_delivery(sessions: sessionmaker[Session], world: World) -> None:
    """One more delivery, through the receiver's and the processor's own paths, whose narration,
    delivery id and headers hold every character COPY treats specially; then a pass."""
    at = world.pass_at + timedelta(seconds=5)
    body = {
        "id": "evt-awkward",
        "event": "PAYMENT_RECEIVED",
        "createdAt": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "data": {
            "holdingRef": str(world.external.holding_ref),
            "accountRef": str(world.external.account_ref),
            "endpointRef": str(world.external.endpoint_ref),
            "amount": "12.34",
            "currency": "NGN",
            "status": "SUCCESSFUL",
            "narration": AWKWARD,
        },
    }
    with sessions() as s, s.begin():
        record_deliveries(
            s.connection(),
            [
                InboundDelivery(
                    delivery_id="evt\tawkward\\id",
                    body=json.dumps(body).encode(),
                    headers={"webhook-id": "evt\tawkward", "x-note": AWKWARD},
                    scheme="standard",
                    event_type=None,
                    received_at=at,
                )
            ],
        )
    with transaction(sessions) as s:
        pending = list(s.scalars(select(Delivery.id).where(Delivery.state == "pending")))
        process_deliveries(s, pending, at + timedelta(seconds=1))
    run_pass(sessions, POLICY, now=at + timedelta(minutes=1), publish=False)


def inbox_tally(result: RebuildResult) -> tuple[object, ...]:
    inbox = result.inbox
    return (inbox.read, inbox.notifications, inbox.quarantined, inbox.restated, inbox.new_ids)


def test_worker_processes_and_this_process_rebuild_the_same_state(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    world = build_world(session_factory)
    add_awkward_delivery(session_factory, world)
    with session_factory() as s:
        kept = s.scalars(select(Notification).where(Notification.event_id.like("evt%awkward%")))
        assert [n.narration for n in kept] == [AWKWARD]  # processing read it whole

    here = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN, workers=0)
    apart = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN, workers=2)

    for result in (here, apart):
        assert result.comparison is not None
        assert [d.as_dict() for d in result.comparison.differences] == []
    assert here.comparison is not None and apart.comparison is not None
    assert apart.comparison.rebuilt.by_name() == here.comparison.rebuilt.by_name()
    assert inbox_tally(apart) == inbox_tally(here)
    # Read: the world's 6 original bodies and the awkward one; the body no shape reads is the
    # quarantined one (the second body under a known id was set aside at intake: not read).
    assert inbox_tally(here)[:3] == (7, 6, 1)
    assert set(apart.inbox.problems) == set(here.inbox.problems) != set()


def test_a_body_whose_text_no_database_can_store_is_set_aside_again_by_the_rebuild(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """A narration spelled with a lone `\\ud800` escape: processing quarantines it with its bytes
    (written, it would fail the statement), and a rebuild must come to the same outcome, in this
    process and in worker processes alike."""
    world = build_world(session_factory)
    at = world.pass_at + timedelta(seconds=5)
    body = {
        "id": "evt-surrogate",
        "event": "PAYMENT_RECEIVED",
        "createdAt": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "data": {
            "holdingRef": str(world.external.holding_ref),
            "accountRef": str(world.external.account_ref),
            "endpointRef": str(world.external.endpoint_ref),
            "amount": "1.00",
            "currency": "NGN",
            "status": "SUCCESSFUL",
            "narration": "half \ud800 a pair",
        },
    }
    raw = json.dumps(body).encode()  # ASCII: the surrogate travels as the escape \ud800
    assert b"\\ud800" in raw
    with session_factory() as s, s.begin():
        record_deliveries(
            s.connection(),
            [
                InboundDelivery(
                    delivery_id="evt-surrogate",
                    body=raw,
                    headers={"webhook-id": "evt-surrogate"},
                    scheme="standard",
                    event_type=None,
                    received_at=at,
                )
            ],
        )
    with transaction(session_factory) as s:
        pending = list(s.scalars(select(Delivery.id).where(Delivery.state == "pending")))
        process_deliveries(s, pending, at + timedelta(seconds=1))
    with session_factory() as s:
        stored = s.scalars(select(Delivery).where(Delivery.delivery_id == "evt-surrogate")).one()
    assert stored.state == "quarantined" and "lone surrogate" in (stored.error or "")
    assert stored.body == raw
    run_pass(session_factory, POLICY, now=at + timedelta(minutes=1), publish=False)

    for workers in (0, 2):
        result = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN, workers=workers)
        assert result.comparison is not None
        assert [d.as_dict() for d in result.comparison.differences] == [], workers


def record_credit(
    sessions: sessionmaker[Session], world: World, event_id: str, at: datetime
) -> None:
    """A PAYMENT_RECEIVED delivery recorded as the receiver records it (not processed yet)."""
    body = {
        "id": event_id,
        "event": "PAYMENT_RECEIVED",
        "createdAt": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "data": {
            "holdingRef": str(world.external.holding_ref),
            "accountRef": str(world.external.account_ref),
            "endpointRef": str(world.external.endpoint_ref),
            "amount": "7.00",
            "currency": "NGN",
            "status": "SUCCESSFUL",
            "receiptRef": str(uuid.uuid4()),
        },
    }
    with sessions() as s, s.begin():
        record_deliveries(
            s.connection(),
            [
                InboundDelivery(
                    delivery_id=event_id,
                    body=json.dumps(body).encode(),
                    headers={"webhook-id": event_id},
                    scheme="standard",
                    event_type=None,
                    received_at=at,
                )
            ],
        )


def process_pending(sessions: sessionmaker[Session], at: datetime) -> None:
    with transaction(sessions) as s:
        pending = list(s.scalars(select(Delivery.id).where(Delivery.state == "pending")))
        process_deliveries(s, pending, at)


class _ReaderThatBreaks(PayloadReader):
    """The configured reader, except that reading a body with `evt-breaks` in it raises: what
    any failure recon did not foresee (MemoryError, RecursionError) does."""

    def read(self, body: bytes, headers: Any) -> Any:
        if b"evt-breaks" in body:
            raise RecursionError("maximum recursion depth exceeded")
        return super().read(body, headers)


def test_a_body_whose_reading_raises_is_set_aside_again_by_the_rebuild(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """Processing sets aside a delivery whose reading raises, alone; the rebuild decides with
    the same decision, so it comes to the same outcome rather than failing (it used to raise)."""
    world = build_world(session_factory)
    at = world.pass_at + timedelta(seconds=5)
    reader = _ReaderThatBreaks(READER.adapters)
    record_credit(session_factory, world, "evt-breaks", at)
    with transaction(session_factory) as s:
        pending = list(s.scalars(select(Delivery.id).where(Delivery.state == "pending")))
        process_deliveries(s, pending, at + timedelta(seconds=1), reader)
    run_pass(session_factory, POLICY, now=at + timedelta(minutes=1), publish=False)

    result = rebuild(engine, POLICY, reader, mode=Mode.DRY_RUN, workers=0)
    assert result.comparison is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
    with session_factory() as s:
        stored = s.scalars(select(Delivery).where(Delivery.delivery_id == "evt-breaks")).one()
    assert stored.state == "quarantined"
    assert (stored.error or "").startswith("reading the body failed: RecursionError")
    assert result.inbox.restated == 0  # derived as the live inbox derived it


def test_facts_that_came_after_the_last_pass_are_not_yet_judged_never_a_difference(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """A running store: a delivery the last pass saw arrive but not processed, then (after the
    pass) a posting, a balance snapshot and another delivery. The rebuild judges what the pass
    judged and counts the rest; once a pass has run, it judges them too."""
    world = build_world(session_factory)
    at = world.pass_at + timedelta(minutes=1)
    record_credit(session_factory, world, "evt-seen-pending", at)
    run_pass(session_factory, POLICY, now=at + timedelta(seconds=5), publish=False)
    later = at + timedelta(seconds=10)
    process_pending(session_factory, later)  # its notification came after the pass
    record_credit(session_factory, world, "evt-after-pass", later)
    process_pending(session_factory, later)
    with transaction(session_factory) as s:
        s.add(posting_for(world.external, uuid.uuid4(), "credit", 4_200, later))
        s.add(  # long past its finality deadline: the next pass will say so, not the rebuild
            Transfer(
                transfer_ref=uuid.uuid4(),
                source_holding_ref=world.internal.holding_ref,
                dest_holding_ref=world.external.holding_ref,
                currency="NGN",
                amount_minor=5_000,
                status="awaiting_finality",
                is_terminal=False,
                is_successful=False,
                requested_at=T0,
                origin="created",
            )
        )
        s.add(
            BalanceSnapshot(
                holding_id=world.external.id,
                settled_minor=254_200,
                available_minor=254_200,
                reserved_minor=0,
                observed_at=later,
            )
        )

    waiting = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert waiting.comparison is not None
    assert [d.as_dict() for d in waiting.comparison.differences] == []
    assert waiting.horizon is not None
    assert waiting.horizon.unjudged == {
        "postings": 1,
        "deliveries": 1,
        "notifications": 2,
        "transfers": 1,
        "changed transfers": 0,
        "balance snapshots": 1,
    }

    run_pass(session_factory, POLICY, now=later + timedelta(seconds=5), publish=False)
    judged = rebuild(engine, POLICY, READER, mode=Mode.DRY_RUN)

    assert judged.comparison is not None and judged.horizon is not None
    assert [d.as_dict() for d in judged.comparison.differences] == []
    assert set(judged.horizon.unjudged.values()) == {0}
    before, after = waiting.comparison.live.by_name(), judged.comparison.live.by_name()
    for table in ("notifications", "deliveries", "balance_checks", "open_alerts"):
        assert before[table] != after[table], table  # now judged, and compared


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        # evt-credit arrived twice with different bodies
        ("delivery_body_conflict", r"webhook delivery evt-credit was re-sent"),
        # a credit to a holding with an account was never notified: the holding is named by
        # its stored locator, which the rebuild copies
        ("posting_without_notification", r" on holding \d{10} World \(receipt "),
    ],
)
def test_an_alert_reads_the_same_live_and_rebuilt(
    engine: Engine, session_factory: sessionmaker[Session], kind: str, said: str
) -> None:
    build_world(session_factory)
    with session_factory() as s:
        live = s.scalars(select(Alert.subject).where(Alert.kind == kind)).one()

    rebuild(engine, POLICY, READER, mode=Mode.KEEP)

    kept = scratch_store.scratch_for(engine)
    try:
        with make_session_factory(kept.engine)() as s:
            rebuilt = s.scalars(select(Alert.subject).where(Alert.kind == kind)).one()
    finally:
        scratch_store.drop(kept)
    assert rebuilt == live
    assert re.search(said, live), live
