"""The webhook inbox, store side: record deliveries in batches, deduplicated and durable.

The receiver hands over verified deliveries, many at a time (group commit), and answers 2xx only
once `record_deliveries` has committed. Deduplication is durable, here, on the unique
(delivery_id, body_sha256) pair (invariant 2, docs/architecture.md):

- same id, same body: a provider retry; nothing new is stored and nothing is re-processed;
- same id, different body: the new row is kept but quarantined, and an alert is raised, because
  a provider that changes what an event said is a story someone must look at;
- a verified body that cannot be parsed is kept quarantined, with its bytes, so the provider
  is not asked to retry what will never parse and nothing is lost.

No HTTP here: the web layer turns outcomes into status codes. Paging through the inbox, looking
rows up and replaying them is `reconciliation.notifications.inbox_access`.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, NamedTuple

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import raise_alert
from reconciliation.notifications.inbox_insert import (
    NewRow,
    atomic,
    insert_originals,
    insert_others,
)
from reconciliation.store.models import Delivery

#: Delivery states (docs/architecture.md, the store): waiting for the processor, done, set aside
#: for a person, or judged by a person not to be the true body of its delivery id (kept as
#: evidence: reconciliation.operator.body_conflicts).
PENDING: Final = "pending"
PROCESSED: Final = "processed"
QUARANTINED: Final = "quarantined"
REJECTED: Final = "rejected"
STATES: Final = (PENDING, PROCESSED, QUARANTINED, REJECTED)

#: Alert kind for a delivery id re-sent with a different body.
BODY_CONFLICT_ALERT: Final = "delivery_body_conflict"
#: What settles a delivery id re-sent with another body (replaying cannot).
BODY_CONFLICT_NEXT_STEP: Final = (
    "ask the provider which body is true, then mark it: recon deliveries choose ROW_ID, or "
    "the console's delivery page, 'This body is the true one' (the other bodies are kept as "
    "evidence); replaying cannot settle it"
)
#: Why a row with a known id and a new body is quarantined, with the step that settles it.
BODY_CONFLICT_REASON: Final = (
    f"delivery id re-sent with a different body: {BODY_CONFLICT_NEXT_STEP}"
)
#: Longest page `list_deliveries` returns.
MAX_PAGE_SIZE: Final = 500
#: Longest delivery id the column holds; a longer one is stored by its hash.
MAX_DELIVERY_ID_LENGTH: Final = 255


class Outcome(enum.Enum):
    """What recording one delivery did."""

    ACCEPTED = "accepted"
    QUARANTINED = "quarantined"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"


@dataclass(slots=True)
class InboundDelivery:
    """A delivery whose signature has been verified, ready to be committed.

    `quarantine_reason` is set when the receiver already knows the body can never be processed
    (malformed JSON, no id); such a delivery is stored 'quarantined' rather than 'pending'.
    """

    delivery_id: str
    body: bytes
    headers: dict[str, str]
    scheme: str
    event_type: str | None
    received_at: datetime
    quarantine_reason: str | None = None
    body_sha256: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.body_sha256:
            self.body_sha256 = hashlib.sha256(self.body).hexdigest()


class Recorded(NamedTuple):
    """The outcome for one delivery; `row_id` is set when a new row was stored.

    Immutable as a named tuple rather than a frozen dataclass: the receiver makes one per
    delivery, and a frozen dataclass's constructor costs several times as much.
    """

    outcome: Outcome
    row_id: int | None


#: The outcome of every duplicate (they differ in nothing): made once.
_DUPLICATE: Final = Recorded(Outcome.DUPLICATE, None)


def stored_delivery_id(delivery_id: str) -> str:
    """The id as stored: itself, or `sha256:<hex>` when it does not fit the column."""
    if len(delivery_id) <= MAX_DELIVERY_ID_LENGTH:
        return delivery_id
    return "sha256:" + hashlib.sha256(delivery_id.encode()).hexdigest()


def record_deliveries(
    connection: Connection, deliveries: Sequence[InboundDelivery]
) -> list[Recorded]:
    """Store a batch; one Recorded per input, in order.

    In the connection's open transaction, if there is one. On a connection set up with
    `use_statement_commits` (the receiver's writers) a batch of new deliveries is one statement
    that commits by itself; other bodies under known ids and their alerts commit together in a
    transaction of their own. Duplicates and other bodies are told apart by the database's
    unique indexes (reconciliation.notifications.inbox_insert), so concurrent writers and web processes
    agree; within the batch the first body of an id is the original.
    """
    plan = plan_batch(deliveries)
    inserted, collided = insert_originals(connection, plan.originals)
    conflicted: dict[tuple[str, str], int] = {}
    if collided or plan.others:
        with atomic(connection):
            conflicted = record_others(connection, deliveries, [*collided, *plan.others])
    return outcomes(deliveries, plan, inserted, conflicted)


@dataclass(slots=True)
class BatchPlan:
    """A batch sorted before it meets the database.

    `originals` are first bodies of their id within the batch (new, unless the store already
    has the id); `others` are further bodies under an id seen earlier in the batch; `planned` is
    each first occurrence's outcome if it turns out to be new.
    """

    originals: list[NewRow]
    others: list[NewRow]
    planned: dict[tuple[str, str], Outcome]


def plan_batch(deliveries: Sequence[InboundDelivery]) -> BatchPlan:
    """Sort a batch: first body of each id, further bodies, and what each would be if new."""
    plan = BatchPlan([], [], {})
    planned = plan.planned
    # Ids met so far; `planned` holds each (id, body) met, so no set of bodies per id is built.
    ids: set[str] = set()
    for d in deliveries:
        key = (d.delivery_id, d.body_sha256)
        if key in planned:
            continue
        if d.delivery_id in ids:
            plan.others.append(NewRow(d, QUARANTINED, BODY_CONFLICT_REASON))
            outcome = Outcome.CONFLICT
        elif d.quarantine_reason is not None:
            plan.originals.append(NewRow(d, QUARANTINED, d.quarantine_reason))
            outcome = Outcome.QUARANTINED
        else:
            plan.originals.append(NewRow(d, PENDING, None))
            outcome = Outcome.ACCEPTED
        ids.add(d.delivery_id)
        planned[key] = outcome
    return plan


def record_others(
    connection: Connection, deliveries: Sequence[InboundDelivery], rows: Sequence[NewRow]
) -> dict[tuple[str, str], int]:
    """Rows that could not go in as originals: duplicates stay out, other bodies are stored
    quarantined with their alert. Call inside a transaction (`atomic`): row and alert commit
    together. Returns the row ids of the other bodies stored."""
    conflicted = insert_others(
        connection,
        rows,
        conflict=(QUARANTINED, BODY_CONFLICT_REASON),
    )
    if conflicted:
        # Rare: worth an ORM session on the same connection and transaction.
        by_key = {(d.delivery_id, d.body_sha256): d for d in deliveries}
        with Session(bind=connection) as session:
            for key, row_id in conflicted.items():
                _alert_body_conflict(session, by_key[key], row_id)
            session.flush()
    return conflicted


def outcomes(
    deliveries: Sequence[InboundDelivery],
    plan: BatchPlan,
    inserted: dict[tuple[str, str], int],
    conflicted: dict[tuple[str, str], int],
) -> list[Recorded]:
    """One Recorded per delivery, in order, from what went in."""
    inserted, conflicted = dict(inserted), dict(conflicted)
    planned = plan.planned
    results: list[Recorded] = []
    for d in deliveries:
        key = (d.delivery_id, d.body_sha256)
        new_row = inserted.pop(key, None)
        if new_row is not None:
            results.append(Recorded(planned[key], new_row))
            continue
        other_row = conflicted.pop(key, None)
        if other_row is not None:
            results.append(Recorded(Outcome.CONFLICT, other_row))
        else:
            # Stored before, or earlier in this batch.
            results.append(_DUPLICATE)
    return results


def _alert_body_conflict(session: Session, delivery: InboundDelivery, row_id: int) -> None:
    others = session.execute(
        select(Delivery.id, Delivery.body_sha256, Delivery.received_at)
        .where(Delivery.delivery_id == delivery.delivery_id, Delivery.id != row_id)
        .order_by(Delivery.id)
    ).all()
    raise_alert(
        session,
        kind=BODY_CONFLICT_ALERT,
        severity="high",
        subject=body_conflict_subject(delivery.delivery_id),
        fingerprint=body_conflict_fingerprint(delivery.delivery_id),
        evidence={
            "delivery_id": delivery.delivery_id,
            "quarantined_row_id": row_id,
            "quarantined_body_sha256": delivery.body_sha256,
            "event_type": delivery.event_type,
            "earlier_rows": [
                {
                    "row_id": o.id,
                    "body_sha256": o.body_sha256,
                    "received_at": o.received_at.isoformat(),
                }
                for o in others
            ],
        },
    )


def body_conflict_subject(delivery_id: str) -> str:
    """What a body-conflict alert says, whichever path raises it (intake, a pass, a rebuild):
    the same alert must read the same live and rebuilt."""
    return (
        f"webhook delivery {delivery_id} was re-sent with a different body; the first body "
        "was applied, the other is quarantined in the inbox"
    )


def body_conflict_fingerprint(delivery_id: str) -> str:
    """One alert per delivery id, however many different bodies arrive under it."""
    digest = hashlib.sha256(delivery_id.encode()).hexdigest()[:32]
    return f"{BODY_CONFLICT_ALERT}:{digest}"
