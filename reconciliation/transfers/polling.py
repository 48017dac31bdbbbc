"""Transfers until terminal: which are due, who polls them, and what changed.

A transfer is polled until its status is terminal. While it stays `awaiting_finality` the wait
between polls doubles (capped), so a slow rail costs few requests; a notification naming it
brings the next poll forward (reconciliation.notifications.processing).

Several workers share the work by claiming due rows with a lease: one UPDATE that sets
`lease_owner` on rows picked by a subquery. On PostgreSQL the subquery says FOR UPDATE SKIP
LOCKED, so concurrent claimers pass over each other's rows instead of queueing behind them; on
SQLite (one writer at a time) the same statement is already exclusive. The HTTP calls happen
after the claim has committed, outside any transaction.

Whether a transfer is done, and whether it succeeded, is the status read's `isTerminal` and
`isSuccessful` and nothing else: status, reason and stage names beyond those the spec shows are
the provider's to choose, so they are stored verbatim and never interpreted. The status read
carries no stage; a stage is stored only as the gateway named it (on create, or in a status read
that has one) or as the spec pairs it with a status (`TransferStatus.implied_stage`). A status
whose stage is not known leaves the stage empty rather than guessed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import false, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import Transfer, TransferChange
from reconciliation.store.write_statements import insert_ignoring_conflicts, rows_touched
from reconciliation.transfers.fees import apply_fee_columns, fee_columns, replace_fee_receipts
from upstream import Stage, Status, TransferStatus
from upstream import Transfer as WireTransfer

#: First wait after a non-terminal poll, and the cap the doubling stops at (seconds).
BACKOFF_FIRST_SECONDS: Final = 2.0
BACKOFF_CAP_SECONDS: Final = 300.0

#: How long a claim keeps other workers off a transfer (a claimer that dies frees it after this).
CLAIM_SECONDS: Final = 60.0

#: How the transfers table learned of a transfer we asked the gateway for ourselves.
ORIGIN_CREATED: Final = "created"
#: ... of a transfer created elsewhere that an operator asked us to follow (`recon transfer
#: track`, `POST /transfers/{ref}/track`).
ORIGIN_IMPORTED: Final = "imported"


@dataclass(frozen=True, slots=True)
class Backoff:
    """Doubling waits between polls of a transfer that is still not terminal."""

    first_seconds: float = BACKOFF_FIRST_SECONDS
    cap_seconds: float = BACKOFF_CAP_SECONDS

    def delay(self, attempts: int) -> timedelta:
        """Wait after the `attempts`-th non-terminal poll (1 -> first, 2 -> twice that, ...)."""
        exponent = min(max(attempts - 1, 0), 32)
        return timedelta(seconds=min(self.cap_seconds, self.first_seconds * 2**exponent))


@dataclass(frozen=True, slots=True)
class ClaimedTransfer:
    """A transfer this worker may poll now."""

    id: int
    transfer_ref: uuid.UUID


def record_created_transfer(session: Session, created: WireTransfer, now: datetime) -> int:
    """Track a transfer recon created: its material as sent, its first stage, polled from now.

    Idempotent on transfer_ref (a replayed creation finds the row already there). A transfer
    denied at creation is terminal at once; one reserved is due for its first status read now.
    """
    denied = created.stage == Stage.RESERVATION_DENIED
    values: dict[str, Any] = {
        "transfer_ref": created.transfer_ref,
        "source_account_ref": created.source.account_ref,
        "source_endpoint_ref": created.source.endpoint_ref,
        "source_holding_ref": created.source.holding_ref,
        "dest_account_ref": created.destination.account_ref,
        "dest_endpoint_ref": created.destination.endpoint_ref,
        "dest_holding_ref": created.destination.holding_ref,
        "currency": str(created.value_unit),
        "amount_minor": created.amount_minor_units,
        "material_fingerprint": created.material_fingerprint,
        "requested_by": created.requested_by,
        "stage": created.stage,
        "status": Status.RESERVATION_DENIED if denied else None,
        "reason": created.denial_reason,
        "revision": created.revision,
        "is_terminal": denied,
        "is_successful": False if denied else None,
        "requested_at": created.requested_at,
        "decided_at": created.decided_at,
        "origin": ORIGIN_CREATED,
        "next_poll_at": None if denied else now,
        "poll_attempts": 0,
        "terminal_at": now if denied else None,
        "created_at": now,
        "updated_at": now,
    }
    inserted = session.scalar(
        insert_ignoring_conflicts(session, Transfer, ["transfer_ref"])
        .values(**values)
        .returning(Transfer.id)
    )
    if inserted is not None:
        session.add(
            TransferChange(
                transfer_id=inserted,
                observed_at=now,
                stage=created.stage,
                status=values["status"],
                reason=created.denial_reason,
                revision=created.revision,
                is_terminal=denied,
                is_successful=values["is_successful"],
            )
        )
        return int(inserted)
    existing = session.scalar(
        select(Transfer.id).where(Transfer.transfer_ref == created.transfer_ref)
    )
    assert existing is not None
    return existing


def claim_due_transfers(
    factory: sessionmaker[Session],
    owner: str,
    now: datetime,
    limit: int,
    claim_seconds: float = CLAIM_SECONDS,
) -> list[ClaimedTransfer]:
    """Lease up to `limit` non-terminal transfers whose poll is due, oldest due first."""
    due = (
        select(Transfer.id)
        .where(
            # "= false", the form the partial poll-due index is defined by (store/models.py).
            Transfer.is_terminal == false(),
            or_(Transfer.next_poll_at.is_(None), Transfer.next_poll_at <= now),
            or_(Transfer.lease_owner.is_(None), Transfer.lease_expires_at < now),
        )
        .order_by(Transfer.next_poll_at.asc().nulls_first(), Transfer.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    with transaction(factory) as session:
        rows = session.execute(
            update(Transfer)
            .where(Transfer.id.in_(due.scalar_subquery()))
            .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=claim_seconds))
            .returning(Transfer.id, Transfer.transfer_ref)
        ).all()
    return sorted((ClaimedTransfer(r.id, r.transfer_ref) for r in rows), key=lambda c: c.id)


def record_status(
    factory: sessionmaker[Session],
    claimed: ClaimedTransfer,
    owner: str,
    status: TransferStatus,
    now: datetime,
    backoff: Backoff,
) -> bool:
    """Store what the status read said, note any change, and schedule the next poll (or none).

    Returns True when stage, status, reason, revision or the outcome (terminal, successful)
    changed. Does nothing if the claim was lost (another worker will record its own read).
    """
    with transaction(factory) as session:
        transfer = _still_claimed(session, claimed, owner)
        if transfer is None:
            return False
        stage = _stage_after(transfer, status)
        terminal = bool(transfer.is_terminal) or status.is_terminal
        successful = status.is_successful if status.is_terminal else transfer.is_successful
        before = (
            transfer.stage,
            transfer.status,
            transfer.reason,
            transfer.revision,
            bool(transfer.is_terminal),
            transfer.is_successful,
        )
        after = (stage, status.status, status.reason, status.revision, terminal, successful)
        changed = before != after
        if changed:
            session.add(
                TransferChange(
                    transfer_id=transfer.id,
                    observed_at=now,
                    stage=stage,
                    status=status.status,
                    reason=status.reason,
                    revision=status.revision,
                    is_terminal=terminal,
                    is_successful=successful,
                )
            )
        transfer.stage, transfer.status, transfer.reason, transfer.revision = after[:4]
        if apply_fee_columns(transfer, status.fees):
            replace_fee_receipts(session, transfer.id, transfer.fee_evidence)
        transfer.last_polled_at = now
        transfer.lease_owner = None
        transfer.lease_expires_at = None
        if status.is_terminal:
            transfer.is_terminal = True
            transfer.is_successful = status.is_successful
            transfer.terminal_at = transfer.terminal_at or now
            transfer.next_poll_at = None
        else:
            transfer.poll_attempts += 1
            transfer.next_poll_at = now + backoff.delay(transfer.poll_attempts)
        transfer.updated_at = now
    return changed


def _stage_after(transfer: Transfer, status: TransferStatus) -> str | None:
    """The stage to store with this read: named or implied by it, else kept only if unchanged."""
    implied = status.implied_stage
    if implied is not None:
        return implied
    return transfer.stage if status.status == transfer.status else None


def record_imported_transfer(session: Session, status: TransferStatus, now: datetime) -> bool:
    """Follow a transfer created elsewhere from its first status read; False if known already.

    Its material (holdings, amount) is unknown: the status read carries none. Matching links it
    to postings through the notification that names its transferRef. A non-terminal one is due
    for its next poll at once. Its fee is read from the status's `fees`, its bearer from the
    fee lines' words (recon sent no instruction).
    """
    fees = fee_columns(status.fees, None)
    fees["fee_bearer"] = fees.pop("lines_bearer", None)
    inserted = session.scalar(
        insert_ignoring_conflicts(session, Transfer, ["transfer_ref"])
        .values(
            transfer_ref=status.transfer_ref,
            stage=status.implied_stage,
            status=status.status,
            reason=status.reason,
            revision=status.revision,
            is_terminal=status.is_terminal,
            is_successful=status.is_successful if status.is_terminal else None,
            origin=ORIGIN_IMPORTED,
            next_poll_at=None if status.is_terminal else now,
            poll_attempts=0,
            last_polled_at=now,
            terminal_at=now if status.is_terminal else None,
            created_at=now,
            updated_at=now,
            **fees,
        )
        .returning(Transfer.id)
    )
    if inserted is None:
        return False
    replace_fee_receipts(session, inserted, fees.get("fee_evidence"))
    session.add(
        TransferChange(
            transfer_id=inserted,
            observed_at=now,
            stage=status.implied_stage,
            status=status.status,
            reason=status.reason,
            revision=status.revision,
            is_terminal=status.is_terminal,
            is_successful=status.is_successful if status.is_terminal else None,
        )
    )
    return True


def record_poll_failure(
    factory: sessionmaker[Session],
    claimed: ClaimedTransfer,
    owner: str,
    now: datetime,
    backoff: Backoff,
) -> None:
    """The status read failed: back off like a non-terminal answer and free the claim."""
    with transaction(factory) as session:
        transfer = _still_claimed(session, claimed, owner)
        if transfer is None:
            return
        transfer.poll_attempts += 1
        transfer.next_poll_at = now + backoff.delay(transfer.poll_attempts)
        transfer.last_polled_at = now
        transfer.lease_owner = None
        transfer.lease_expires_at = None
        transfer.updated_at = now


def _still_claimed(session: Session, claimed: ClaimedTransfer, owner: str) -> Transfer | None:
    """The transfer row, locked, if our claim still holds; else None.

    The first statement is a write (a no-op UPDATE guarded by the owner): it takes the row lock
    on PostgreSQL and the write lock on SQLite before anything is read, so nobody can take the
    claim between our check and our write.
    """
    held = rows_touched(
        session.execute(
            update(Transfer)
            .where(Transfer.id == claimed.id, Transfer.lease_owner == owner)
            .values(lease_owner=owner)
        )
    )
    if held != 1:
        return None
    return session.get(Transfer, claimed.id)


def release_claims(
    factory: sessionmaker[Session], claims: list[ClaimedTransfer], owner: str
) -> None:
    """Give back claims not polled (time ran out); they stay due for the next claimer."""
    if not claims:
        return
    with transaction(factory) as session:
        session.execute(
            update(Transfer)
            .where(Transfer.id.in_([c.id for c in claims]), Transfer.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )


@dataclass(frozen=True, slots=True)
class TransferLegs:
    """The holdings (and endpoints, where a leg names no holding) a set of transfers moved."""

    holding_refs: set[uuid.UUID]
    endpoint_refs: set[uuid.UUID]


def transfer_legs(session: Session, transfer_refs: Sequence[uuid.UUID]) -> TransferLegs:
    """Both legs of these transfers: the holdings whose postings a terminal transfer made.

    A leg outside recon's holdings (another company's account) names nothing stored, and is
    ignored by whoever signals the holdings.
    """
    legs = TransferLegs(set(), set())
    if not transfer_refs:
        return legs
    rows = session.execute(
        select(
            Transfer.source_holding_ref,
            Transfer.source_endpoint_ref,
            Transfer.dest_holding_ref,
            Transfer.dest_endpoint_ref,
        ).where(Transfer.transfer_ref.in_(list(transfer_refs)))
    )
    for source_holding, source_endpoint, dest_holding, dest_endpoint in rows:
        for holding, endpoint in ((source_holding, source_endpoint), (dest_holding, dest_endpoint)):
            if holding is not None:
                legs.holding_refs.add(holding)
            elif endpoint is not None:
                legs.endpoint_refs.add(endpoint)
    return legs
