"""A small store with records of every age and standing, for the retention tests.

Each record is made for one reason (old and matched, old but unmatched, old but named by an open
alert, recent, ...) and its id is remembered under that reason, so a test can say what must be
gone and what must stay after a prune without re-deriving it from the store.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.matching.backlog import watermark_name
from reconciliation.store import watermarks
from reconciliation.store.models import (
    Alert,
    BalanceCheck,
    BalanceSnapshot,
    Delivery,
    Holding,
    Match,
    MatchBacklog,
    Notification,
    OutboundRequest,
    Posting,
    Transfer,
    TransferChange,
)
from reconciliation.store.types import utcnow

#: About when the prunes of these tests run (the CLI reads the real clock): every age below is
#: hours or days away from a cutoff, so the minutes a test takes never move a record across one.
NOW: Final = utcnow().replace(microsecond=0)
OLD: Final = NOW - timedelta(days=120)
RECENT: Final = NOW - timedelta(minutes=20)


@dataclass(slots=True)
class Built:
    """Ids by the reason they were made."""

    deliveries: dict[str, int] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    transfers: dict[str, int] = field(default_factory=dict)
    holding: int = 0


def build(factory: sessionmaker[Session]) -> Built:
    built = Built()
    with factory.begin() as s:
        holding = Holding(
            account_ref=uuid.uuid4(),
            endpoint_ref=uuid.uuid4(),
            holding_ref=uuid.uuid4(),
            currency="NGN",
        )
        s.add(holding)
        s.flush()
        built.holding = holding.id
        _deliveries(s, built, holding)
        _requests(s, built)
        _transfers(s, built)
        _snapshots(s, holding)
        s.flush()
        # Every item has been seen by a pass, except the newest notification (see "unseen").
        for stream, column in (
            ("notification", Notification.id),
            ("posting", Posting.id),
            ("transfer", Transfer.id),
        ):
            top = int(s.scalar(select(func.max(column))) or 0)
            seen = top - 1 if stream == "notification" else top
            watermarks.write(s, watermark_name(stream), seen, NOW)
    return built


def _delivery(s: Session, state: str, at: datetime, **extra: object) -> Delivery:
    row = Delivery(
        delivery_id=f"msg_{uuid.uuid4().hex}",
        body_sha256=uuid.uuid4().hex * 2,
        body=b'{"raw": "\x00\xff bytes"}' + uuid.uuid4().bytes,
        headers={"webhook-id": "x"},
        scheme="standard",
        event_type="PAYMENT_RECEIVED",
        received_at=at,
        state=state,
        attempts=1,
        processed_at=at if state == "processed" else None,
        original=True,
        **extra,
    )
    s.add(row)
    s.flush()
    return row


def _notification(
    s: Session, delivery: Delivery, holding: Holding, status: str = "unmatched"
) -> Notification:
    row = Notification(
        delivery_pk=delivery.id,
        event_id=delivery.delivery_id,
        event_type="PAYMENT_RECEIVED",
        receipt_ref=uuid.uuid4(),
        holding_ref=holding.holding_ref,
        amount_minor=5_000,
        currency="NGN",
        occurred_at=delivery.received_at,
        created_at=delivery.received_at,
        match_status=status,
    )
    s.add(row)
    s.flush()
    return row


def _deliveries(s: Session, built: Built, holding: Holding) -> None:
    for n in range(3):  # old, processed, its notification matched: prunable
        d = _delivery(s, "processed", OLD + timedelta(minutes=n))
        note = _notification(s, d, holding)
        posting = Posting(
            journal_ref=uuid.uuid4(),
            line_ref=uuid.uuid4(),
            receipt_ref=note.receipt_ref,
            holding_id=holding.id,
            posted_at=OLD,
            side="credit",
            effect="increase",
            kind="transfer_settlement",
            amount_minor=5_000,
            currency="NGN",
        )
        s.add(posting)
        s.flush()
        s.add(
            Match(
                rule="receipt_ref", posting_id=posting.id, notification_id=note.id, matched_at=OLD
            )
        )
        built.deliveries[f"matched{n}"] = d.id
    d = _delivery(s, "processed", OLD)
    s.add(MatchBacklog(kind="notification", item_id=_notification(s, d, holding).id, queued_at=OLD))
    built.deliveries["backlog"] = d.id
    d = _delivery(s, "processed", OLD)
    _notification(s, d, holding, status="exception")
    built.deliveries["exception"] = d.id
    d = _delivery(s, "processed", OLD)
    s.add(
        Alert(
            kind="delivery_body_conflict",
            severity="high",
            subject="x",
            fingerprint="a1",
            evidence={"deliveryId": d.delivery_id},
            state="open",
            opened_at=OLD,
            last_seen_at=OLD,
        )
    )
    built.deliveries["alerted"] = d.id
    d = _delivery(s, "processed", OLD)
    note = _notification(s, d, holding)
    s.add(
        Alert(
            kind="notification_without_posting",
            severity="high",
            subject="y",
            fingerprint="a2",
            evidence={"notification": {"notificationId": note.id}},
            state="acknowledged",
            opened_at=OLD,
            last_seen_at=OLD,
        )
    )
    built.deliveries["alerted_notification"] = d.id
    built.deliveries["pending"] = _delivery(s, "pending", OLD).id
    built.deliveries["quarantined"] = _delivery(s, "quarantined", OLD).id
    built.deliveries["recent"] = _delivery(s, "processed", RECENT).id
    built.deliveries["no_notification"] = _delivery(s, "processed", OLD).id
    d = _delivery(s, "processed", OLD)  # its notification is the newest: no pass has seen it
    _notification(s, d, holding)
    built.deliveries["unseen"] = d.id


def _requests(s: Session, built: Built) -> None:
    for name, state, at in (
        ("done", "done", OLD),
        ("failed", "failed", OLD),
        ("pending", "pending", OLD),
        ("sent", "sent", OLD),
        ("recent", "done", RECENT),
    ):
        row = OutboundRequest(
            idempotency_key=uuid.uuid4(),
            operation="create_transfer",
            material_fingerprint=uuid.uuid4().hex,
            request_body={"amount": 1},
            state=state,
            created_at=at,
            completed_at=at if state in ("done", "failed") else None,
        )
        s.add(row)
        s.flush()
        built.requests[name] = row.id


def _transfers(s: Session, built: Built) -> None:
    for name, terminal, at in (
        ("terminal", True, OLD),
        ("backlog", True, OLD),
        ("alerted", True, OLD),
        ("moving", False, None),
        ("recent", True, RECENT),
    ):
        row = Transfer(
            transfer_ref=uuid.uuid4(),
            is_terminal=terminal,
            origin="created",
            terminal_at=at,
            created_at=OLD,
            updated_at=OLD,
            status="completed" if terminal else None,
        )
        s.add(row)
        s.flush()
        for step in range(4):
            s.add(
                TransferChange(
                    transfer_id=row.id,
                    observed_at=OLD + timedelta(minutes=step),
                    status=f"step{step}",
                )
            )
        built.transfers[name] = row.id
    s.add(MatchBacklog(kind="transfer", item_id=built.transfers["backlog"], queued_at=OLD))
    s.add(
        Alert(
            kind="finality_overdue",
            severity="medium",
            subject="z",
            fingerprint="a3",
            evidence={"transfer": {"transferId": built.transfers["alerted"]}},
            state="open",
            opened_at=OLD,
            last_seen_at=OLD,
        )
    )


#: Hourly snapshots over this many days, ending at NOW.
SNAPSHOT_DAYS: Final = 5


def snapshot_balance(hour: int) -> int:
    """The settled balance at each hour: moves at 03:00 and 15:00 of some days only."""
    return 1_000_000 + 100 * sum(1 for h in range(hour + 1) if h % 24 in (3,) and h // 24 % 2 == 0)


def snapshot_time(hour: int) -> datetime:
    """Half past each hour: never on a cutoff, which falls on NOW's own minute."""
    return NOW - timedelta(days=SNAPSHOT_DAYS) + timedelta(hours=hour, minutes=30)


def _snapshots(s: Session, holding: Holding) -> None:
    for hour in range(SNAPSHOT_DAYS * 24):
        amount = snapshot_balance(hour)
        snap = BalanceSnapshot(
            holding_id=holding.id,
            settled_minor=amount,
            available_minor=amount,
            reserved_minor=0,
            projection_state="Projected",
            observed_at=snapshot_time(hour),
        )
        s.add(snap)
        s.flush()
        drift = 7 if hour == 30 else 0  # one check found drift: its snapshot is evidence
        s.add(
            BalanceCheck(
                snapshot_id=snap.id,
                holding_id=holding.id,
                observed_at=snap.observed_at,
                settled_minor=amount,
                posted_minor=amount - drift,
                drift_minor=drift,
                postings_through_id=0,
                checked_at=snap.observed_at,
            )
        )
