"""From inbox delivery to notification: what the provider claims, normalised and exact.

The receiver stored each delivery's exact bytes before answering 2xx (invariant 1,
docs/architecture.md); this module turns those bytes into a `Notification` row. Reading the
bytes is `upstream.webhooks.payloads`' job: the provider's payload shape is "not shown" in its
spec, so a `PayloadReader` tries every configured shape and hands back one normalised value
(refs as UUIDs, money as exact integer minor units, the account number, the claim's time, the
body's own id) or says precisely what no shape could find. The transfer a notification names is
recorded so the transfer poller asks the gateway for its truth. Claiming the delivery, writing
the notification, recording the transfer and marking the delivery processed happen in one
transaction, so a crash leaves either all of it or none.

Identity is the delivery id (the `webhook-id` header, or the body id under schemes that sign
only the body), as Standard Webhooks has it; a body id that differs is kept on the
notification as evidence, never a reason to refuse. What each delivery becomes is decided by
`reconciliation.notifications.deciding`, the decision the rebuild makes again: a delivery no
shape reads is quarantined with its bytes untouched and a `delivery_not_understood` alert naming
what is missing (reconciliation.notifications.shape_alerts); it is read again by a replay once
recon learns the shape. Processing is idempotent: only `pending` deliveries are claimed, and the claim holds the
row until the commit (a row lock on PostgreSQL, the write lock on SQLite), so two workers handed
the same delivery never both process it.

A batch costs a few statements whatever its size (reconciliation.notifications.processing_writes):
the drain after a broker outage, when the sweep re-sends every pending delivery in large
batches, runs at the pace of reading the bodies.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from psycopg import Error as DriverError
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from reconciliation.notifications.deciding import (
    FIX_AND_REPLAY,
    KEPT,
    Decision,
    SetAside,
    read_body,
    whole,
)
from reconciliation.notifications.inbox import PENDING
from reconciliation.notifications.inbox_access import RESENT_THROUGH
from reconciliation.notifications.processing_writes import (
    ORIGIN_NOTIFIED,
    BatchWrites,
    notification_values,
)
from reconciliation.notifications.shape_alerts import raise_shape_alerts, resolve_cleared
from reconciliation.store import watermarks
from reconciliation.store.models import Delivery
from reconciliation.store.write_statements import refusal
from upstream import DeliveryNotification, DeliveryNotUnderstood, PayloadReader, configured_reader

__all__ = ["ORIGIN_NOTIFIED", "ProcessOutcome", "process_deliveries"]

#: Watermarks of the sweep's re-send round (see ResendMark): the highest delivery row id sent,
#: and when the round began, in milliseconds.
RESEND_ROUND_STARTED: Final = "sweep.deliveries.round_started_ms"

#: Every built-in shape in the default order: what a caller without settings reads with.
DEFAULT_READER: Final = configured_reader()


class UnreadableDeliveryError(ValueError):
    """A delivery body that does not say what a notification must; the message says why."""


@dataclass(slots=True)
class ProcessOutcome:
    """What a batch did, for logs, metrics and tests."""

    processed: list[int] = field(default_factory=list)
    quarantined: list[int] = field(default_factory=list)
    transfers_named: list[uuid.UUID] = field(default_factory=list)
    #: The holdings the batch's notifications name (holdingRef, endpointRef): their reads are
    #: due at once, and one the store does not have asks for discovery
    #: (reconciliation.postings.discovery_asks).
    holdings_named: set[uuid.UUID] = field(default_factory=set)
    endpoints_named: set[uuid.UUID] = field(default_factory=set)
    #: The account numbers of notifications that name no holding by ref: the holdings they
    #: address are due at once all the same (a provider may send only the account number).
    account_numbers_named: set[str] = field(default_factory=set)
    #: Alerts opened or refreshed for deliveries no shape reads, and alerts that cleared.
    shape_alerts: list[int] = field(default_factory=list)
    resolved_alerts: list[int] = field(default_factory=list)

    def named(self, note: DeliveryNotification) -> None:
        """Keep what a processed notification names: its transfer, and its holding."""
        if note.transfer_ref is not None:
            self.transfers_named.append(note.transfer_ref)
        if note.holding_ref is not None:
            self.holdings_named.add(note.holding_ref)
        if note.endpoint_ref is not None:
            self.endpoints_named.add(note.endpoint_ref)
        if note.holding_ref is None and note.endpoint_ref is None and note.account_number:
            self.account_numbers_named.add(note.account_number)


def read_notification(
    body: bytes,
    headers: Mapping[str, str] | None = None,
    reader: PayloadReader = DEFAULT_READER,
) -> DeliveryNotification:
    """Read one body; raise UnreadableDeliveryError saying what no shape could find."""
    result = reader.read(body, headers or {})
    if isinstance(result, DeliveryNotUnderstood):
        raise UnreadableDeliveryError(result.describe())
    return result


def process_deliveries(
    session: Session,
    delivery_pks: Sequence[int],
    now: datetime,
    reader: PayloadReader = DEFAULT_READER,
) -> ProcessOutcome:
    """Turn pending deliveries into notifications, inside the caller's transaction.

    Deliveries already processed or quarantined (or claimed by another worker that committed
    first) are skipped. What each claimed delivery becomes is decided by
    `reconciliation.notifications.deciding`, as the rebuild decides it. The batch is written
    set-wise, a few statements whatever its size (reconciliation.notifications.processing_writes),
    so a large batch (the sweep's re-sends after an outage) costs little more than the reading
    of its bodies.
    """
    outcome = ProcessOutcome()
    if not delivery_pks:
        return outcome
    writes = BatchWrites(session)
    claimed = writes.claim(delivery_pks)
    earlier_problems = {row.shape_problem for row in claimed if row.shape_problem}
    decision = Decision(told=writes.notified_by([row.delivery_id for row in claimed]))
    reads = [read_body(reader, whole, row.body, row.headers or {}) for row in claimed]
    fresh: list[dict[str, Any]] = []
    done: list[tuple[int, str]] = []
    for row, verdict in zip(claimed, decision.decide(claimed, reads), strict=True):
        if isinstance(verdict, SetAside):
            writes.quarantine(row.id, verdict.error, verdict.shape_problem)
            outcome.quarantined.append(row.id)
            continue
        note: DeliveryNotification = verdict.kept
        if not verdict.noted:
            fresh.append(notification_values(row.id, row.delivery_id, note))
        done.append((row.id, verdict.event_type))
        outcome.processed.append(row.id)
        outcome.named(note)
    _store_isolating_refusals(writes, fresh, done, now, outcome)
    writes.record_transfers(outcome.transfers_named, now)
    if decision.problems or earlier_problems:
        # Counted over the store, so the rows just marked must be visible to the count.
        session.flush()
        outcome.shape_alerts = raise_shape_alerts(session, decision.problems, reader.shapes, now)
        outcome.resolved_alerts = resolve_cleared(
            session, earlier_problems - set(decision.problems)
        )
        session.flush()
    return outcome


#: Why a delivery the store refused is set aside (`_store_isolating_refusals`).
STORE_REFUSED: Final = "the store refused its notification ({reason})"


def _store_isolating_refusals(
    writes: BatchWrites,
    fresh: list[dict[str, Any]],
    done: list[tuple[int, str]],
    now: datetime,
    outcome: ProcessOutcome,
) -> None:
    """Write the batch in one go; if the store refuses it, write it a delivery at a time so
    that only the delivery it refuses is quarantined (with the reason) and every other one is
    processed. Without this one bad row failed the batch's statement, every retry and every
    re-send of the sweep, holding back every delivery batched with it."""
    session = writes.session
    try:
        with session.begin_nested():
            writes.store_processed(fresh, done, now)
        return
    except (SQLAlchemyError, DriverError, ValueError):
        pass
    by_delivery = {n["delivery_pk"]: n for n in fresh}
    for pk, event_type in done:
        note = by_delivery.get(pk)
        try:
            with session.begin_nested():
                writes.store_processed([note] if note else [], [(pk, event_type)], now)
        except (SQLAlchemyError, DriverError, ValueError) as exc:
            reason = STORE_REFUSED.format(reason=refusal(exc))
            writes.quarantine(pk, KEPT.format(reason=reason, next_step=FIX_AND_REPLAY))
            outcome.processed.remove(pk)
            outcome.quarantined.append(pk)
            if note is not None and note["transfer_ref"] is not None:
                outcome.transfers_named.remove(note["transfer_ref"])


def record_named_transfers(session: Session, refs: Sequence[uuid.UUID], now: datetime) -> None:
    """Make sure each named transfer is polled soon: new ones are due now, waiting ones sooner.

    A notification is a hint that something changed; the gateway's status read is the truth,
    so a non-terminal transfer in backoff is brought forward rather than left to wait.
    """
    BatchWrites(session).record_transfers(refs, now)


def pending_deliveries(
    session: Session, received_before: datetime, limit: int, after_id: int = 0
) -> list[int]:
    """Deliveries still pending that arrived before the cutoff, above `after_id`, in id order
    (for the sweep, which re-sends them a chunk at a time from where its last chunk ended)."""
    return list(
        session.scalars(
            select(Delivery.id)
            .where(
                Delivery.state == PENDING,
                Delivery.received_at < received_before,
                Delivery.id > after_id,
            )
            .order_by(Delivery.id)
            .limit(limit)
        )
    )


@dataclass(frozen=True, slots=True)
class ResendMark:
    """How far the sweep's current round of re-sending has got: every pending delivery up to
    `through` was handed to the broker once since `started`, and is not sent again this round."""

    through: int
    started: datetime


def read_resend_mark(session: Session, now: datetime, round_age: timedelta) -> ResendMark:
    """The current round, or a new one (from id 0) when the last began `round_age` ago."""
    started_ms = watermarks.read(session, RESEND_ROUND_STARTED, 0)
    if not started_ms or now - watermarks.from_millis(started_ms) >= round_age:
        return ResendMark(through=0, started=now)
    return ResendMark(
        through=watermarks.read(session, RESENT_THROUGH, 0),
        started=watermarks.from_millis(started_ms),
    )


def advance_resend_mark(session: Session, mark: ResendMark, through: int, now: datetime) -> None:
    """Record that the round has sent everything pending up to `through`."""
    watermarks.write(session, RESENT_THROUGH, max(mark.through, through), now)
    watermarks.write(session, RESEND_ROUND_STARTED, watermarks.to_millis(mark.started), now)
