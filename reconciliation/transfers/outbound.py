"""Idempotency-Keys for gateway writes, kept in the store's outbound-requests table.

This is the store side of `upstream.idempotency.IdempotencyKeys` (invariant 6, docs/architecture.md): a key is
committed before its request goes out, so a process that dies after sending and is run again
finds the same key for the same material, and the gateway replays instead of moving twice.

Two workers asking for a key for the same material at the same moment must get the same key, or
the gateway would see two different requests. Each `key_for` therefore runs in a transaction
that first takes a lock named after the material: an advisory transaction lock on PostgreSQL,
the database write lock on SQLite (taken by a no-op write before the lookup).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import OutboundRequest, TransferIntent
from reconciliation.store.types import utcnow
from reconciliation.transfers.intents import PENDING
from upstream import Outcome, canonical_json, material_fingerprint

OPEN_STATES = ("pending", "sent")


def _lock_id(operation: str, fingerprint: str) -> int:
    """A signed 64-bit number naming (operation, material) for pg_advisory_xact_lock."""
    digest = hashlib.sha256(f"{operation}\0{fingerprint}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _serialise(session: Session, operation: str, fingerprint: str) -> None:
    """Make concurrent key_for calls for the same material take turns (see module docstring)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        session.execute(
            text("SELECT pg_advisory_xact_lock(:id)"), {"id": _lock_id(operation, fingerprint)}
        )
    elif dialect == "sqlite":
        # A write statement takes SQLite's RESERVED lock even when it changes no row, so the
        # lookup below cannot race another writer's insert.
        session.execute(update(OutboundRequest).where(OutboundRequest.id == -1).values(state="x"))


class StoreIdempotencyKeys:
    """`IdempotencyKeys` backed by `OutboundRequest` rows."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self._sessions = session_factory

    def __repr__(self) -> str:
        return "StoreIdempotencyKeys()"

    def key_for(self, operation: str, material: Mapping[str, object]) -> UUID:
        """The open key for this operation and material, or a new one committed before return."""
        fingerprint = material_fingerprint(material)
        with transaction(self._sessions) as session:
            _serialise(session, operation, fingerprint)
            existing = session.scalars(
                select(OutboundRequest.idempotency_key)
                .where(
                    OutboundRequest.operation == operation,
                    OutboundRequest.material_fingerprint == fingerprint,
                    OutboundRequest.state.in_(OPEN_STATES),
                )
                .order_by(OutboundRequest.id.desc())
                .limit(1)
            ).first()
            if existing is not None:
                return existing
            unanswered = _settled_but_unrecorded(session, operation, fingerprint)
            if unanswered is not None:
                return unanswered
            key = uuid.uuid4()
            body: dict[str, Any] = _as_json(material)
            session.add(
                OutboundRequest(
                    idempotency_key=key,
                    operation=operation,
                    material_fingerprint=fingerprint,
                    request_body=body,
                    state="pending",
                )
            )
            return key

    def sent(self, key: UUID) -> None:
        """Note that the request is going out now (first attempt only)."""
        with transaction(self._sessions) as session:
            session.execute(
                update(OutboundRequest)
                .where(OutboundRequest.idempotency_key == key, OutboundRequest.state == "pending")
                .values(state="sent", sent_at=utcnow())
            )

    def completed(
        self,
        key: UUID,
        outcome: str,
        result_ref: str | None,
        *,
        http_status: int | None = None,
    ) -> None:
        """Close the key as done (the gateway acted or replayed) or failed (refused for good)."""
        with transaction(self._sessions) as session:
            session.execute(
                update(OutboundRequest)
                .where(
                    OutboundRequest.idempotency_key == key,
                    OutboundRequest.state.in_(OPEN_STATES),
                )
                .values(
                    state="failed" if Outcome.is_failure(outcome) else "done",
                    completed_at=utcnow(),
                    response_status=http_status,
                    result_ref=result_ref,
                )
            )

    def find(self, key: UUID) -> OutboundRequest | None:
        """The row of a key, for operators and tests."""
        with self._sessions() as session:
            return session.scalars(
                select(OutboundRequest).where(OutboundRequest.idempotency_key == key)
            ).first()


def _settled_but_unrecorded(session: Session, operation: str, fingerprint: str) -> UUID | None:
    """A closed key for this material whose transfer intent still waits for its answer.

    The gateway client closes a key as soon as the gateway answers, and the intent records that
    answer a moment later, in its own transaction. A process killed in between leaves the key
    done and the intent pending: the answer is lost to us, not to the gateway. Taking a new key
    then would move the money a second time, so the rerun goes out under this key again and the
    gateway replays what it did. Only a transfer create has intents; for other operations this
    finds nothing.
    """
    return session.scalars(
        select(OutboundRequest.idempotency_key)
        .join(TransferIntent, TransferIntent.idempotency_key == OutboundRequest.idempotency_key)
        .where(
            OutboundRequest.operation == operation,
            OutboundRequest.material_fingerprint == fingerprint,
            OutboundRequest.state == "done",
            TransferIntent.outcome == PENDING,
        )
        .order_by(OutboundRequest.id.desc())
        .limit(1)
    ).first()


def _as_json(material: Mapping[str, object]) -> dict[str, Any]:
    """The material as plain JSON values (UUIDs and the like as strings), as fingerprinted."""
    value = json.loads(canonical_json(material))
    assert isinstance(value, dict)
    return value
