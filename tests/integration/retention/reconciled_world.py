"""A month of reconciled history, made through recon's own live paths, for the limits' tests.

Deliveries go in through `record_deliveries`, become notifications through `process_deliveries`
and are matched, alerted and balance-checked by `run_pass`; postings, transfers, intents and
snapshots are written as the pollers would. Every group is made for one reason, remembered by
name, so a test says what must be gone and what must stay without re-deriving it:

old, settled, free to go (30 days before NOW, limits 10 days):
    `settled`    a transfer's two legs, its TRANSACTION_COMPLETED, the transfer (history and
                 answered intent), matched by transfer_ref
    `credit`     an inbound credit and its PAYMENT_RECEIVED, matched by receipt_ref
    `denied`     a transfer the gateway denied: no match row, reconciled on its own; its
                 intent's key record (outbound_requests) is old enough to go first
    `moneyless`  an ACCOUNT_CREATED notification (carries no money, never matched)
    `lag_old`    a credit on the `lagging` holding, before its one balance check
old, and must stay:
    `silent`     a credit never notified: in the backlog, a posting_without_notification alert
    `altered`    a credit whose notification says one unit more: an open amount_mismatch
    `unchecked`  a credit on a holding never balance-checked (the check sums it from nothing)
    `lag_new`    a credit on `lagging` after its latest check (the next check adds it)
balance snapshots: the internal holding's at T0 (first of its day) and T0 + 1 h (a change
the same day: it goes under a postings limit), and the latest of every holding.
recent (younger than every limit of 10 days):
    `recent`     an inbound credit and its notification, 2 days before NOW
    `in_grace`   a credit posted 30 s before the external holding's latest snapshot, which
                 does not show it yet: its check explains the difference by the projection's
                 lag (60 s), and reads the posting again whenever the sum is recomputed
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from foundation import RetentionSettings
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.store.db import transaction
from reconciliation.store.models import (
    BalanceSnapshot,
    Holding,
    Locator,
    Match,
    Notification,
    OutboundRequest,
    Posting,
    Transfer,
    TransferChange,
    TransferIntent,
)
from tests.integration.reconciliation.through_inbox import deliver_through_inbox

T0: Final = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
#: When the prunes of these tests run: 30 days after the old history, 2 after the recent.
NOW: Final = T0 + timedelta(days=30)
POLICY: Final = ReconcilePolicy(
    notification_grace_seconds=60,
    finality_deadline_seconds=600,
    projection_grace_seconds=60,
    match_window_seconds=3600,
)
#: The limits of these tests, in days, for every kind (deliveries and keys too, so nothing
#: waits on an inbox row or a key record kept longer).
LIMIT_DAYS: Final = 10.0
#: Every limit set to LIMIT_DAYS.
LIMITS: Final = RetentionSettings(
    delivery_days=LIMIT_DAYS,
    outbound_request_days=LIMIT_DAYS,
    snapshot_thin_days=2,
    transfer_history_days=7,
    resolved_alert_days=None,
    run_seconds=3600.0,
    archive_dir=None,
    posting_days=LIMIT_DAYS,
    transfer_days=LIMIT_DAYS,
    notification_days=LIMIT_DAYS,
    match_days=LIMIT_DAYS,
)

EXTERNAL_ACCOUNT: Final = "1000000002"


@dataclass
class World:
    """Holdings by name; item ids by the reason they were made."""

    holdings: dict[str, Holding] = field(default_factory=dict)
    postings: dict[str, list[int]] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    transfers: dict[str, int] = field(default_factory=dict)


def _holding(s: Session, name: str, world: World, account: str | None = None) -> Holding:
    h = Holding(
        account_ref=uuid.uuid4(),
        endpoint_ref=uuid.uuid4(),
        holding_ref=uuid.uuid4(),
        currency="NGN",
    )
    s.add(h)
    s.flush()
    if account is not None:
        s.add(
            Locator(
                holding_id=h.id,
                locator_ref=uuid.uuid4(),
                form="nigerian_bank_account",
                display=f"000:{account}:{name}",
                bank_code="000",
                account_number=account,
                account_name=name,
            )
        )
    world.holdings[name] = h
    return h


def _posting(
    s: Session,
    world: World,
    name: str,
    h: Holding,
    receipt: uuid.UUID,
    side: str,
    amount: int,
    at: datetime,
) -> None:
    p = Posting(
        journal_ref=uuid.uuid4(),
        line_ref=uuid.uuid4(),
        receipt_ref=receipt,
        holding_id=h.id,
        posted_at=at,
        side=side,
        effect="increase" if side == "credit" else "decrease",
        kind="transfer_settlement",
        amount_minor=amount,
        currency="NGN",
        ingested_at=at,
    )
    s.add(p)
    s.flush()
    world.postings.setdefault(name, []).append(p.id)


def _body(event_id: str, kind: str, at: datetime, h: Holding, **data: Any) -> bytes:
    money = {
        "accountRef": str(h.account_ref),
        "endpointRef": str(h.endpoint_ref),
        "holdingRef": str(h.holding_ref),
        "amount": None,
        "currency": None,
        "status": None,
        "transferRef": None,
        "receiptRef": None,
    }
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    payload = {"id": event_id, "event": kind, "createdAt": stamp, "data": money | data}
    return json.dumps(payload).encode()


def _paid(
    event_id: str,
    kind: str,
    at: datetime,
    h: Holding,
    amount: str,
    receipt: uuid.UUID,
    **extra: Any,
) -> tuple[str, bytes]:
    """A delivery claiming money moved on `h`, under receipt `receipt`."""
    data = {"amount": amount, "currency": "NGN", "status": "SUCCESSFUL", "receiptRef": str(receipt)}
    return event_id, _body(event_id, kind, at, h, **data, **extra)


def snapshot(s: Session, h: Holding, settled: int, at: datetime) -> None:
    s.add(
        BalanceSnapshot(
            holding_id=h.id,
            settled_minor=settled,
            available_minor=settled,
            reserved_minor=0,
            projection_state="Projected",
            observed_at=at,
        )
    )


def _transfer(
    s: Session, world: World, name: str, status: str, source: Holding, dest: Holding
) -> Transfer:
    t = Transfer(
        transfer_ref=uuid.uuid4(),
        source_holding_ref=source.holding_ref,
        dest_holding_ref=dest.holding_ref,
        currency="NGN",
        amount_minor=10_000,
        stage="settled" if status == "completed" else "denied",
        status=status,
        is_terminal=True,
        is_successful=status == "completed",
        requested_at=T0,
        terminal_at=T0 + timedelta(seconds=2),
        created_at=T0,
        updated_at=T0,
        origin="created",
    )
    s.add(t)
    s.flush()
    for step, at in enumerate((T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=2))):
        s.add(TransferChange(transfer_id=t.id, observed_at=at, status=f"{status}-{step}"))
    key = uuid.uuid4()
    s.add(
        TransferIntent(
            idempotency_key=key,
            requested_via="api",
            source_account_ref=source.account_ref,
            source_endpoint_ref=source.endpoint_ref,
            source_holding_ref=source.holding_ref,
            dest_account_ref=dest.account_ref,
            dest_endpoint_ref=dest.endpoint_ref,
            dest_holding_ref=dest.holding_ref,
            currency="NGN",
            amount_minor=10_000,
            material_fingerprint=uuid.uuid4().hex,
            outcome="reserved" if status == "completed" else "denied",
            transfer_ref=t.transfer_ref,
            created_at=T0,
            answered_at=T0,
        )
    )
    s.add(
        OutboundRequest(
            idempotency_key=key,
            operation="create_transfer",
            material_fingerprint=uuid.uuid4().hex,
            request_body={"amount": 10_000},
            state="done",
            created_at=T0,
            sent_at=T0,
            completed_at=T0,
        )
    )
    world.transfers[name] = t.id
    return t


def build_world(sessions: sessionmaker[Session]) -> World:
    """The history described in the module docstring, reconciled by real passes."""
    world = World()
    r = {name: uuid.uuid4() for name in ("settled", "credit", "silent", "altered", "unchecked")}
    r |= {name: uuid.uuid4() for name in ("lag_old", "lag_new", "recent", "in_grace")}
    with transaction(sessions) as s:
        internal = _holding(s, "internal", world)
        external = _holding(s, "external", world, EXTERNAL_ACCOUNT)
        lagging = _holding(s, "lagging", world)
        unchecked = _holding(s, "unchecked", world)
        settled = _transfer(s, world, "settled", "completed", internal, external)
        _transfer(s, world, "denied", "reservation_denied", internal, external)
        s.add(  # another request, still open: its key stays, and holds up no other transfer
            OutboundRequest(
                idempotency_key=uuid.uuid4(),
                operation="create_transfer",
                material_fingerprint=uuid.uuid4().hex,
                request_body={"amount": 1},
                state="sent",
                created_at=T0,
                sent_at=T0,
            )
        )
        at = T0 + timedelta(seconds=1)
        _posting(s, world, "settled", internal, r["settled"], "debit", 10_000, at)
        _posting(s, world, "settled", external, r["settled"], "credit", 10_000, at)
        _posting(s, world, "credit", external, r["credit"], "credit", 50_000, at)
        _posting(s, world, "silent", external, r["silent"], "credit", 70_000, at)
        _posting(s, world, "altered", external, r["altered"], "credit", 90_000, at)
        _posting(s, world, "unchecked", unchecked, r["unchecked"], "credit", 7_000, at)
        _posting(s, world, "lag_old", lagging, r["lag_old"], "credit", 5_000, at)
    at = T0 + timedelta(seconds=10)
    pay = "PAYMENT_RECEIVED"
    deliver_through_inbox(
        sessions,
        [
            _paid(
                "evt-settled",
                "TRANSACTION_COMPLETED",
                at,
                internal,
                "100.00",
                r["settled"],
                transferRef=str(settled.transfer_ref),
            ),
            _paid("evt-credit", pay, at, external, "500.00", r["credit"]),
            _paid("evt-altered", pay, at, external, "900.01", r["altered"]),
            _paid("evt-unchecked", pay, at, unchecked, "70.00", r["unchecked"]),
            _paid("evt-lag-old", pay, at, lagging, "50.00", r["lag_old"]),
            (
                "evt-moneyless",
                _body(
                    "evt-moneyless", "ACCOUNT_CREATED", at, external, accountNumber=EXTERNAL_ACCOUNT
                ),
            ),
        ],
        at,
    )
    with transaction(sessions) as s:
        snapshot(s, internal, 0, T0)  # before the transfer settled: the first of its day
    run_pass(sessions, POLICY, now=T0 + timedelta(minutes=10), publish=False)
    with transaction(sessions) as s:
        snapshot(s, internal, -10_000, T0 + timedelta(hours=1))  # a change on the same day
        snapshot(s, external, 220_000, T0 + timedelta(hours=1))
        snapshot(s, lagging, 5_000, T0 + timedelta(hours=1))
    run_pass(sessions, POLICY, now=T0 + timedelta(hours=1, minutes=1), publish=False)

    at = T0 + timedelta(days=2)
    with transaction(sessions) as s:
        _posting(s, world, "lag_new", lagging, r["lag_new"], "credit", 6_000, at)
    deliver_through_inbox(
        sessions, [_paid("evt-lag-new", pay, at, lagging, "60.00", r["lag_new"])], at
    )
    run_pass(sessions, POLICY, now=at + timedelta(minutes=10), publish=False)

    at = NOW - timedelta(days=2)
    with transaction(sessions) as s:
        _posting(s, world, "recent", external, r["recent"], "credit", 50_000, at)
    deliver_through_inbox(
        sessions, [_paid("evt-recent", pay, at, external, "500.00", r["recent"])], at
    )
    run_pass(sessions, POLICY, now=at + timedelta(minutes=10), publish=False)
    at = NOW - timedelta(hours=1, seconds=30)
    with transaction(sessions) as s:
        _posting(s, world, "in_grace", external, r["in_grace"], "credit", 1_000, at)
    deliver_through_inbox(
        sessions, [_paid("evt-in-grace", pay, at, external, "10.00", r["in_grace"])], at
    )
    with transaction(sessions) as s:
        snapshot(s, internal, -10_000, NOW - timedelta(hours=1))
        snapshot(s, external, 270_000, NOW - timedelta(hours=1))  # not showing `in_grace` yet
    run_pass(sessions, POLICY, now=NOW - timedelta(minutes=50), publish=False)
    with sessions() as s:
        for event_id, note_id in s.execute(select(Notification.event_id, Notification.id)):
            world.notifications[event_id.removeprefix("evt-").replace("-", "_")] = note_id
    return world


def settle_after_prune(sessions: sessionmaker[Session], world: World) -> None:
    """Every holding's balance now (what the provider would say), then a pass: the drift check
    builds each holding's sum on its latest check, or from nothing for one never checked."""
    h = world.holdings
    with transaction(sessions) as s:
        snapshot(s, h["internal"], -10_000, NOW)
        snapshot(s, h["external"], 271_000, NOW)
        snapshot(s, h["lagging"], 11_000, NOW)
        snapshot(s, h["unchecked"], 7_000, NOW)
    run_pass(sessions, POLICY, now=NOW + timedelta(minutes=1), publish=False)


def match_rows(sessions: sessionmaker[Session]) -> list[tuple[int | None, int | None, int | None]]:
    with sessions() as s:
        return [
            (r.posting_id, r.transfer_id, r.notification_id)
            for r in s.execute(select(Match.posting_id, Match.transfer_id, Match.notification_id))
        ]
