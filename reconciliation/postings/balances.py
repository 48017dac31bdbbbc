"""Balance snapshots: what the gateway said each watched holding's balance was, and when.

One balance read answers for every holding of an endpoint, so the snapshot pass reads once per
endpoint and stores a row per watched holding it finds in the answer. `observed_at` is the time
of the read, taken right after the answer arrived: comparing a snapshot with the postings
(the reconciler's job) needs to know how fresh the projection was, not when we wrote it down.
Amounts are int minor units as the upstream client converted them.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import RESOLVED, fingerprint, raise_alert, resolve_alert
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import ActivityCursor, Alert, BalanceSnapshot, Holding
from reconciliation.store.write_statements import refusal
from upstream import BalanceSnapshot as WireSnapshot

#: A due time this far past a snapshot's observation is a claim's mark (a claim marks at least
#: twice this on) or the previous ceiling, not a read that made the snapshot due again after
#: the balance was observed (which sets it to the read's end, within a read of the snapshot).
CLAIM_MARK_AFTER: Final = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class EndpointToRead:
    """One balance read to make: an endpoint and the watched holdings it should answer for."""

    account_ref: uuid.UUID
    endpoint_ref: uuid.UUID
    holding_ids: dict[uuid.UUID, int]


def endpoints_to_read(
    session: Session, endpoint_refs: Collection[uuid.UUID] | None = None
) -> list[EndpointToRead]:
    """Every endpoint with at least one watched holding (or those of `endpoint_refs`), with
    those holdings' ids."""
    grouped: dict[tuple[uuid.UUID, uuid.UUID], dict[uuid.UUID, int]] = {}
    query = (
        select(Holding.id, Holding.account_ref, Holding.endpoint_ref, Holding.holding_ref)
        .where(Holding.watched.is_(True))
        .order_by(Holding.endpoint_ref, Holding.id)
    )
    batches: list[list[uuid.UUID] | None] = [None]
    if endpoint_refs is not None:
        batches = list(chunks(sorted(set(endpoint_refs))))
    for batch in batches:
        picked = query if batch is None else query.where(Holding.endpoint_ref.in_(batch))
        for holding_id, account_ref, endpoint_ref, holding_ref in session.execute(picked):
            grouped.setdefault((account_ref, endpoint_ref), {})[holding_ref] = holding_id
    return [
        EndpointToRead(account_ref=a, endpoint_ref=e, holding_ids=h)
        for (a, e), h in grouped.items()
    ]


def claim_due_endpoints(
    session: Session,
    now: datetime,
    redo_after: timedelta,
    limit: int,
    holding_id: int | None = None,
) -> list[EndpointToRead]:
    """Endpoints with a holding whose balance snapshot is due (only `holding_id`'s when given),
    oldest due first, at most `limit` due holdings' worth, from the balance_due_at index.

    A snapshot is due soon after a read that stored postings, and at the staleness ceiling for
    a silent holding. Every holding of a chosen endpoint is marked `now + redo_after` (the read
    answers for them all): a lost message makes them due again then.
    """
    due = (
        select(ActivityCursor.holding_id)
        .where(ActivityCursor.balance_due_at <= now)
        .order_by(ActivityCursor.balance_due_at, ActivityCursor.holding_id)
        .limit(limit)
    )
    if holding_id is not None:
        due = due.where(ActivityCursor.holding_id == holding_id)
    ids = list(session.scalars(due))
    if not ids:
        return []
    refs: set[uuid.UUID] = set()
    for batch in chunks(ids):
        refs.update(session.scalars(select(Holding.endpoint_ref).where(Holding.id.in_(batch))))
    targets = endpoints_to_read(session, refs)
    marked = [h for t in targets for h in t.holding_ids.values()]
    mark = now + max(redo_after, 2 * CLAIM_MARK_AFTER)
    for batch in chunks(marked):
        session.execute(
            update(ActivityCursor)
            .where(ActivityCursor.holding_id.in_(batch))
            .values(balance_due_at=mark)
        )
    return targets


def schedule_next_snapshots(
    session: Session, holding_ids: Collection[int], observed_at: datetime, next_due: datetime
) -> None:
    """After a snapshot observed at `observed_at`: these holdings' next is due at `next_due`
    (the staleness ceiling), unless a read stored postings after the balance was observed
    (their snapshot is due again, and stays so)."""
    for batch in chunks(sorted(holding_ids)):
        session.execute(
            update(ActivityCursor)
            .where(
                ActivityCursor.holding_id.in_(batch),
                or_(
                    ActivityCursor.balance_due_at.is_(None),
                    ActivityCursor.balance_due_at <= observed_at,
                    ActivityCursor.balance_due_at > observed_at + CLAIM_MARK_AFTER,
                ),
            )
            .values(balance_due_at=next_due)
        )


@dataclass(slots=True)
class StoredSnapshot:
    """What one endpoint's answer became: the holdings stored, and those the store refused
    (holding ref -> why)."""

    stored: list[int] = field(default_factory=list)
    refused: dict[uuid.UUID, str] = field(default_factory=dict)


def store_snapshot(
    session: Session, target: EndpointToRead, snapshot: WireSnapshot, observed_at: datetime
) -> StoredSnapshot:
    """Insert one row per watched holding present in the answer.

    Holdings the answer does not mention get no row (a missing row is visible; a made-up zero
    would look like a real balance). A row the store refuses (an amount past what a column
    holds) is set aside with the reason, and the endpoint's other holdings are stored: one
    holding's balance never stops another's snapshots.
    """
    outcome = StoredSnapshot()
    rows: list[dict[str, Any]] = [
        {
            "holding_id": target.holding_ids[b.holding_ref],
            "settled_minor": b.settled_minor_units,
            "available_minor": b.available_minor_units,
            "reserved_minor": b.active_reserved_minor_units,
            "projection_state": b.projection_state or snapshot.projection_state,
            "observed_at": observed_at,
        }
        for b in snapshot.holding_balances
        if b.holding_ref in target.holding_ids
    ]
    refs = {holding_id: ref for ref, holding_id in target.holding_ids.items()}
    try:
        with session.begin_nested():
            if rows:
                session.execute(insert(BalanceSnapshot), rows)
        outcome.stored = [int(r["holding_id"]) for r in rows]
        return outcome
    except (SQLAlchemyError, ValueError):
        pass  # one of the rows is refused: store them one at a time, to find which
    for row in rows:
        try:
            with session.begin_nested():
                session.execute(insert(BalanceSnapshot), [row])
            outcome.stored.append(int(row["holding_id"]))
        except (SQLAlchemyError, ValueError) as exc:
            outcome.refused[refs[row["holding_id"]]] = refusal(exc)
    return outcome


#: Alert raised for a watched holding whose balance could not be snapshotted for a reason
#: waiting will not fix (an answer recon cannot read, a balance the store refuses).
SNAPSHOT_FAILED: Final = "balance_snapshot_failed"

#: Its severity: drift checks of that holding stop until it is fixed.
SNAPSHOT_FAILED_SEVERITY: Final = "high"

#: Who resolves the alert when the holding's snapshot is stored again.
SNAPSHOT_RESOLVER: Final = "snapshot_balances"


def note_snapshot_failures(session: Session, failed: dict[uuid.UUID, str], now: datetime) -> None:
    """Open (or refresh) one alert per holding whose snapshot failed, naming the reason."""
    names = holding_identities(session, failed)
    for holding_ref, reason in failed.items():
        holding = names[str(holding_ref)]
        raise_alert(
            session,
            kind=SNAPSHOT_FAILED,
            severity=SNAPSHOT_FAILED_SEVERITY,
            subject=f"balance snapshot of {holding.phrase} failed: {reason}",
            fingerprint=fingerprint(SNAPSHOT_FAILED, holding_ref),
            evidence={**holding.as_evidence(), "reason": reason},
            now=now,
        )


def clear_snapshot_failures(session: Session, holding_refs: Sequence[uuid.UUID]) -> None:
    """Resolve the failure alerts of holdings whose snapshot was stored again."""
    prints = [fingerprint(SNAPSHOT_FAILED, ref) for ref in holding_refs]
    if not prints:
        return
    for alert_id in session.scalars(
        select(Alert.id).where(Alert.fingerprint.in_(prints), Alert.state != RESOLVED)
    ):
        resolve_alert(session, alert_id, by=SNAPSHOT_RESOLVER, note="a snapshot was stored again")
