"""The adapter interface and the two results a delivery can have: understood, or not.

Every shape a provider might send is one `PayloadAdapter`: it sees the parsed body and the
delivery's headers and returns either a `DeliveryNotification` (the one normalised value inner
layers use, whatever the wire looked like) or a `NotUnderstood` that lists, field by field, what
it looked for and did not find or could not accept. The reader (`payloads.reader`) tries the
configured adapters in order; adding a shape is adding one adapter, nothing else changes.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

#: Event types whose claim is about money: amount and currency must be present, and an outcome
#: (the body's status, or the event type's own in the outcome table).
MONEY_EVENTS: Final = frozenset({"PAYMENT_RECEIVED", "TRANSACTION_COMPLETED", "TRANSACTION_FAILED"})

#: Outcomes an event type may say, and the claimed status each is stored as: the words the
#: built-in shapes' bodies use in `status`, so a notification reads the same whichever said it.
OUTCOME_STATUS: Final = {"successful": "SUCCESSFUL", "failed": "FAILED"}

#: Event type -> outcome, for a body with no status member. The spec names these three as the
#: money events, and their names say how each ended; RECON_EVENT_OUTCOMES replaces the table.
EVENT_OUTCOMES: Final = {
    "PAYMENT_RECEIVED": "successful",
    "TRANSACTION_COMPLETED": "successful",
    "TRANSACTION_FAILED": "failed",
}

ProblemKind = Literal["missing", "invalid"]


@dataclass(frozen=True, slots=True)
class DeliveryNotification:
    """What one delivery claims, normalised: refs as UUIDs, money as exact minor units.

    `body_id` is the body's own id, kept as evidence only: deliveries are deduplicated on the
    `webhook-id` header (Standard Webhooks semantics), and a provider may well put a message id
    there that differs from the event id in the body. `shape` names the adapter that read it.
    """

    shape: str
    body_id: str | None
    event_type: str
    occurred_at: datetime
    transfer_ref: uuid.UUID | None
    receipt_ref: uuid.UUID | None
    account_ref: uuid.UUID | None
    endpoint_ref: uuid.UUID | None
    holding_ref: uuid.UUID | None
    account_number: str | None
    amount_minor: int | None
    currency: str | None
    claimed_status: str | None
    narration: str | None


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """One field an adapter needed: where it looked (`path`), and why it could not use it.

    `detail` may quote the value found (it came from the provider's body, never from us); the
    fingerprint of a shape problem uses only `kind` and `path`, so one alert covers every
    delivery with the same gap whatever their values.
    """

    path: str
    kind: ProblemKind
    detail: str

    def describe(self) -> str:
        return self.detail


@dataclass(frozen=True, slots=True)
class NotUnderstood:
    """Why one adapter could not read a delivery: every problem it found, not just the first."""

    shape: str
    problems: tuple[Problem, ...]
    #: How many of the fields that mark the shape (its id, event type, time) were absent.
    marks_missing: int = 0

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.problems if p.kind == "missing")

    @property
    def invalid(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.problems if p.kind == "invalid")

    def describe(self) -> str:
        """One line: `shape recon: data.amount is missing; createdAt ... has no time zone`."""
        return f"shape {self.shape}: " + "; ".join(p.describe() for p in self.problems)

    def closeness(self) -> tuple[int, int, int]:
        """The shape the body nearly is: most of its marks present, then fewest gaps."""
        return (self.marks_missing, len(self.missing), len(self.invalid))


class PayloadAdapter(abc.ABC):
    """One plausible delivery shape. Subclasses must be stateless after construction, because
    one instance serves every worker thread."""

    #: The name settings use for this shape (RECON_PAYLOAD_SHAPES) and alerts show.
    name: str

    @abc.abstractmethod
    def read(
        self, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> DeliveryNotification | NotUnderstood:
        """Read a parsed JSON object (its numbers are exact `Decimal`/`int`, never floats) and
        the delivery's headers (lower-case names)."""
