"""Transfers: the record, its stages after reservation, and how the terminal outcome is chosen.

The spec stops at ``PrincipalReserved``; the stages after it (``Settled``/``Failed``, revision 3)
are the team's choice in docs/decisions.md and are all named in ``STAGES`` below.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from typing import Any, Literal

from sandbox.config import format_timestamp

#: "hold" keeps a transfer awaiting finality until a later explicit settle or fail: the stuck
#: rail that a finality deadline exists to catch.
Outcome = Literal["settle", "fail", "hold"]
OUTCOMES: tuple[str, ...] = ("settle", "fail", "hold")

RESERVED = "PrincipalReserved"
DENIED = "ReservationDenied"
SETTLED = "Settled"
FAILED = "Failed"
DENIAL_REASON = "InsufficientAvailableBalance"

# stage -> (revision, status, reason, isTerminal, isSuccessful): docs/decisions.md,
# "Transfer life cycle after reservation".
STAGES: dict[str, tuple[int, str, str, bool, bool]] = {
    RESERVED: (2, "awaiting_finality", "finality_missing", False, False),
    DENIED: (1, "reservation_denied", "reservation_denied", True, False),
    SETTLED: (3, "completed", "finality_confirmed", True, True),
    FAILED: (3, "failed", "rail_rejected", True, False),
}

NO_FEES: dict[str, Any] = {
    "status": "not_required",
    "reason": "no_configured_fee",
    "totals": [],
    "lines": [],
}


class Transfer:
    __slots__ = (
        "amount",
        "currency",
        "decided_ms",
        "destination",
        "material_fingerprint",
        "receipt_ref",
        "requested_by",
        "requested_ms",
        "reservation_ref",
        "source",
        "stage",
        "transfer_ref",
    )

    def __init__(
        self,
        *,
        transfer_ref: str,
        source: tuple[str, str, str],
        destination: dict[str, Any],
        currency: str,
        amount: int,
        requested_by: str,
        material_fingerprint: str,
        now_ms: int,
        stage: str,
    ) -> None:
        self.transfer_ref = transfer_ref
        self.source = source  # (accountRef, endpointRef, holdingRef)
        self.destination = destination
        self.currency = currency
        self.amount = amount
        self.requested_by = requested_by
        self.material_fingerprint = material_fingerprint
        self.requested_ms = now_ms
        self.decided_ms = now_ms
        self.stage = stage
        # Set on settlement: the receiptRef shared by both ledger legs.
        self.receipt_ref: str | None = None
        self.reservation_ref: str | None = None

    @property
    def revision(self) -> int:
        return STAGES[self.stage][0]

    @property
    def terminal(self) -> bool:
        return STAGES[self.stage][3]

    def render(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "transferRef": self.transfer_ref,
            "requestedAt": format_timestamp(self.requested_ms),
            "decidedAt": format_timestamp(self.decided_ms),
            "stage": self.stage,
            "revision": self.revision,
            "sourceAccountRef": self.source[0],
            "sourceEndpointRef": self.source[1],
            "sourceHoldingRef": self.source[2],
            "destination": self.destination,
            "valueUnit": {"kind": "fiat", "currency": self.currency},
            "amountMinorUnits": str(self.amount),
            "requestedBy": self.requested_by,
            "materialFingerprint": self.material_fingerprint,
        }
        if self.stage == DENIED:
            out["denialReason"] = DENIAL_REASON
        return out

    def render_status(self) -> dict[str, Any]:
        revision, status, reason, terminal, successful = STAGES[self.stage]
        return {
            "transferRef": self.transfer_ref,
            "status": status,
            "isTerminal": terminal,
            "isSuccessful": successful,
            "reason": reason,
            "revision": revision,
            "fees": dict(NO_FEES),
        }


class OutcomeRule:
    """Decides settle or fail: a fixed outcome per transfer, then a queue, then a seeded coin."""

    def __init__(self, seed: int, failure_probability: float) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(f"outcomes:{seed}")
        self.failure_probability = failure_probability
        self._fixed: dict[str, Outcome] = {}
        self._next: deque[Outcome] = deque()

    def fix(self, transfer_ref: str, outcome: Outcome) -> None:
        with self._lock:
            self._fixed[transfer_ref] = outcome

    def queue_next(self, outcome: Outcome) -> None:
        """Applies to the next transfer that gets reserved (first in, first used)."""
        with self._lock:
            self._next.append(outcome)

    def claim_next(self, transfer_ref: str) -> None:
        """At reservation time, bind a queued outcome to this transfer."""
        with self._lock:
            if self._next and transfer_ref not in self._fixed:
                self._fixed[transfer_ref] = self._next.popleft()

    def decide(self, transfer_ref: str) -> Outcome:
        with self._lock:
            fixed = self._fixed.pop(transfer_ref, None)
            if fixed is not None:
                return fixed
            return "fail" if self._rng.random() < self.failure_probability else "settle"
