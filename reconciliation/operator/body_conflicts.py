"""A delivery id that arrived with two bodies: the operator says which one is true.

The inbox keeps every body it receives (reconciliation.notifications.inbox) and processes the
first; another body under the same id is quarantined and raises `delivery_body_conflict`.
Replaying that body cannot help, since the processor never adds a second story under one id.
What helps is a person's judgement, after asking the provider, of which body is true.
`choose_true_body` records it:

- the chosen row becomes the id's original and is processed: its notification is the id's
  notification. One the first body produced is rewritten in place, keeping its id, so console
  links, matches and alert evidence that name it still do;
- every other body is kept as it arrived, in state `rejected`: evidence, waiting for nobody
  (not counted as quarantined, never replayed in bulk, refused by a single replay);
- a match the notification was in stays when the true body names the same transfer and receipt
  and the same money as the match's postings (a mismatch alert on it then clears at the next
  pass); otherwise it is taken apart, with the reason, and its items become exceptions for a
  person;
- the conflict's alert is resolved in the person's name, with their reason.

Choosing again later (another body turns out to be true) works the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import RESOLVED, resolve_alert
from reconciliation.matching.manual import manual_unmatch
from reconciliation.notifications.deciding import UNSTORABLE, unstorable_text
from reconciliation.notifications.inbox import (
    PENDING,
    PROCESSED,
    REJECTED,
    body_conflict_fingerprint,
)
from reconciliation.notifications.processing import record_named_transfers
from reconciliation.notifications.processing_writes import notification_values
from reconciliation.store.models import Alert, Delivery, Match, Notification, Posting
from reconciliation.store.types import utcnow
from upstream import DeliveryNotUnderstood, PayloadReader

#: What a match must still agree on with the true body to be kept.
MATCH_KEYS: Final = ("transfer_ref", "receipt_ref")


class BodyChoiceError(Exception):
    """The choice cannot be made as asked; the message says why and what to do instead."""


@dataclass(frozen=True, slots=True)
class TrueBodyChosen:
    """What choosing a body did, for the answer a person reads."""

    delivery_id: str
    chosen_row: int
    rejected_rows: list[int]
    notification_id: int | None
    notification_changed: bool
    unmatched: list[int] = field(default_factory=list)
    resolved_alert: int | None = None

    def describe(self) -> str:
        rejected = ", ".join(str(r) for r in self.rejected_rows)
        parts = [
            f"row {self.chosen_row} is the true body of delivery {self.delivery_id}; "
            f"kept as evidence: row {rejected}"
        ]
        if self.notification_id is not None:
            how = "now says what this body says" if self.notification_changed else "unchanged"
            parts.append(f"notification {self.notification_id} {how}")
        if self.unmatched:
            parts.append(
                "taken apart (the true body disagrees with them): match "
                + ", ".join(str(m) for m in self.unmatched)
            )
        if self.resolved_alert is not None:
            parts.append(f"alert {self.resolved_alert} resolved")
        return "; ".join(parts)


def choose_true_body(
    session: Session,
    row_id: int,
    *,
    by: str,
    reason: str,
    reader: PayloadReader,
    now: datetime | None = None,
) -> TrueBodyChosen:
    """Make row `row_id` the true body of its delivery id, inside the caller's transaction."""
    who, why = by.strip(), reason.strip()
    if not who or not why:
        raise BodyChoiceError("say who you are and why this body is true: both are recorded")
    now = now or utcnow()
    chosen = session.get(Delivery, row_id)
    if chosen is None:
        raise BodyChoiceError(f"no delivery with row id {row_id}: see `recon deliveries list`")
    rows = list(
        session.scalars(
            select(Delivery).where(Delivery.delivery_id == chosen.delivery_id).order_by(Delivery.id)
        )
    )
    others = [r for r in rows if r.id != chosen.id]
    if not others:
        raise BodyChoiceError(
            f"delivery {chosen.delivery_id} (row {row_id}) arrived with one body only: there "
            "is no other body to choose between"
        )
    waiting = [r.id for r in rows if r.state == PENDING]
    if waiting:
        raise BodyChoiceError(
            f"row {', '.join(map(str, waiting))} of delivery {chosen.delivery_id} is still "
            "pending: let the workers process it first"
        )
    current = session.scalars(
        select(Notification).where(Notification.delivery_pk.in_([r.id for r in rows]))
    ).first()
    changed, unmatched = False, []
    if not (chosen.state == PROCESSED and current is not None and current.delivery_pk == row_id):
        values = _read(chosen, reader)
        if current is None:
            current = Notification(**values)
            session.add(current)
        else:
            unmatched = _unmatch_disagreeing(session, current, values, who, chosen.delivery_id)
            for name, value in values.items():
                setattr(current, name, value)
        changed = True
        _make_original(session, chosen, others, values["event_type"], now)
        if values["transfer_ref"] is not None:
            record_named_transfers(session, [values["transfer_ref"]], now)
    for other in others:
        other.state = REJECTED
        other.error = (
            f"not the true body of delivery {chosen.delivery_id}: {who} chose row {row_id} "
            f"({why}). Kept unchanged as evidence."
        )
    session.flush()
    return TrueBodyChosen(
        delivery_id=chosen.delivery_id,
        chosen_row=row_id,
        rejected_rows=[r.id for r in others],
        notification_id=current.id if current is not None else None,
        notification_changed=changed,
        unmatched=unmatched,
        resolved_alert=_resolve_conflict_alert(session, chosen.delivery_id, row_id, who, why),
    )


def _read(chosen: Delivery, reader: PayloadReader) -> dict[str, Any]:
    result = reader.read(chosen.body, chosen.headers or {})
    if isinstance(result, DeliveryNotUnderstood):
        raise BodyChoiceError(
            f"row {chosen.id} cannot be read ({result.describe()}): teach recon its shape "
            "(RECON_PAYLOAD_SHAPES, RECON_PAYLOAD_FIELD_MAP) before choosing it"
        )
    unstorable = unstorable_text(result)
    if unstorable is not None:
        raise BodyChoiceError(
            f"row {chosen.id} cannot be stored: {UNSTORABLE.format(field=unstorable)}"
        )
    return notification_values(chosen.id, chosen.delivery_id, result)


def _make_original(
    session: Session, chosen: Delivery, others: list[Delivery], event_type: str, now: datetime
) -> None:
    """The chosen row becomes the id's one original (a partial unique index holds one), marked
    processed as the processor marks a row it read (with the event type the body names)."""
    session.execute(
        update(Delivery)
        .where(Delivery.id.in_([o.id for o in others]))
        .values(original=False)
        .execution_options(synchronize_session=False)
    )
    for other in others:
        session.refresh(other)
    chosen.original = True
    chosen.state = PROCESSED
    chosen.event_type = event_type
    chosen.error = None
    chosen.shape_problem = None
    chosen.processed_at = now
    chosen.attempts = (chosen.attempts or 0) + 1
    session.flush()


def _unmatch_disagreeing(
    session: Session, note: Notification, values: dict[str, Any], who: str, delivery_id: str
) -> list[int]:
    """Take apart the notification's active matches the true body disagrees with."""
    refs_differ = any(getattr(note, key) != values[key] for key in MATCH_KEYS)
    undone = []
    for match in session.scalars(
        select(Match).where(Match.notification_id == note.id, Match.unmatched_at.is_(None))
    ):
        posting = session.get(Posting, match.posting_id) if match.posting_id else None
        money_differs = posting is not None and (
            posting.amount_minor != values["amount_minor"] or posting.currency != values["currency"]
        )
        if refs_differ or money_differs:
            manual_unmatch(
                session,
                match.id,
                by=who,
                reason=f"the true body of delivery {delivery_id} disagrees with this match",
            )
            undone.append(match.id)
    return undone


def _resolve_conflict_alert(
    session: Session, delivery_id: str, row_id: int, who: str, why: str
) -> int | None:
    alert = session.scalars(
        select(Alert).where(Alert.fingerprint == body_conflict_fingerprint(delivery_id))
    ).first()
    if alert is None or alert.state == RESOLVED:
        return None
    resolve_alert(session, alert.id, by=who, note=f"row {row_id} chosen as the true body: {why}")
    return alert.id
