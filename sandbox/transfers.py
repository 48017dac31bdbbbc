"""Transfers: the record, its stages after reservation, and how the terminal outcome is chosen.

The spec stops at ``PrincipalReserved`` / ``ReservationDenied`` and the status
``awaiting_finality``; what comes after reservation is "not shown". The sandbox therefore keeps
one internal phase per transfer (``RESERVED``, ``DENIED``, ``HELD``, ``SETTLED``, ``FAILED``) and
renders it through the variant's vocabulary (``ProviderVariant.status_vocabulary``):

- ``recon``: our first guesses (docs/decisions.md): ``Settled``/``completed``,
  ``Failed``/``failed``; a held transfer simply stays ``awaiting_finality``.
- ``alternate``: other names a real provider could plausibly use: ``SettlementCompleted``/
  ``settled``, ``RailRejected``/``rejected``, and a held transfer moves to a non-terminal status
  of its own (``FinalityHeld``/``held``), so a client that knows only ``awaiting_finality`` as
  "still waiting" is caught out.

Only ``isTerminal`` and ``isSuccessful`` say what a status means; the names are labels.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from typing import Any, Literal, NamedTuple

from sandbox.config import format_timestamp
from sandbox.fees import NO_FEES, NOT_CHARGED, Assessment, FeeLine, FeeStyle, render_fees
from sandbox.units import unit_wire

#: "hold" keeps a transfer from finality until a later explicit settle or fail: the stuck
#: rail that a finality deadline exists to catch.
Outcome = Literal["settle", "fail", "hold"]
OUTCOMES: tuple[str, ...] = ("settle", "fail", "hold")

#: Internal phases (never on the wire as such: the vocabulary names them).
RESERVED = "reserved"
DENIED = "denied"
HELD = "held"
SETTLED = "settled"
FAILED = "failed"
#: Phases a transfer can still leave (an explicit settle or fail ends a held one).
OPEN_PHASES: frozenset[str] = frozenset({RESERVED, HELD})
DENIAL_REASON = "InsufficientAvailableBalance"


class Shown(NamedTuple):
    """How one phase is shown: the record's stage and the status read's members."""

    stage: str
    status: str
    reason: str
    terminal: bool
    successful: bool


#: The spec's own names: reservation and denial read the same under every vocabulary.
_SPEC: dict[str, Shown] = {
    RESERVED: Shown("PrincipalReserved", "awaiting_finality", "finality_missing", False, False),
    DENIED: Shown("ReservationDenied", "reservation_denied", "reservation_denied", True, False),
}
#: vocabulary -> phase -> how it is shown (docs/decisions.md, "Transfer life cycle after
#: reservation", lists the `recon` column; the `alternate` one is a plausible other provider).
VOCABULARIES: dict[str, dict[str, Shown]] = {
    "recon": {
        **_SPEC,
        HELD: _SPEC[RESERVED],
        SETTLED: Shown("Settled", "completed", "finality_confirmed", True, True),
        FAILED: Shown("Failed", "failed", "rail_rejected", True, False),
    },
    "alternate": {
        **_SPEC,
        HELD: Shown("FinalityHeld", "held", "rail_review", False, False),
        SETTLED: Shown("SettlementCompleted", "settled", "rail_confirmed", True, True),
        FAILED: Shown("RailRejected", "rejected", "rail_declined", True, False),
    },
}


class Transfer:
    __slots__ = (
        "amount",
        "currency",
        "decided_ms",
        "destination",
        "fee",
        "fee_lines",
        "fee_style",
        "material_fingerprint",
        "phase",
        "receipt_ref",
        "requested_by",
        "requested_ms",
        "reservation_ref",
        "revision",
        "source",
        "transfer_ref",
        "vocabulary",
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
        phase: str,
        vocabulary: str = "recon",
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
        self.phase = phase  # internal; `shown` gives the names this provider uses for it
        self.vocabulary = vocabulary
        # The spec's revisions: 2 after reservation, 1 after denial; each later move adds one.
        self.revision = 2 if phase == RESERVED else 1
        # Set on settlement: the receiptRef shared by both ledger legs.
        self.receipt_ref: str | None = None
        self.reservation_ref: str | None = None
        # The fee assessed at creation (None: no schedule, or it came to nothing), its
        # evidence lines, and how this provider posts and shows them.
        self.fee: Assessment | None = None
        self.fee_lines: list[FeeLine] = []
        self.fee_style = FeeStyle()

    @property
    def shown(self) -> Shown:
        return VOCABULARIES[self.vocabulary][self.phase]

    @property
    def stage(self) -> str:
        """The stage as the gateway names it."""
        return self.shown.stage

    @property
    def terminal(self) -> bool:
        return self.shown.terminal

    def vocabulary_holds_apart(self) -> bool:
        """Whether this provider shows a held transfer differently from a reserved one."""
        table = VOCABULARIES[self.vocabulary]
        return table[HELD] != table[RESERVED]

    def move(self, phase: str) -> None:
        """Enter `phase` (a later stage: the revision grows by one)."""
        self.phase = phase
        self.revision += 1

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
            "valueUnit": unit_wire(self.currency),
            "amountMinorUnits": str(self.amount),
            "requestedBy": self.requested_by,
            "materialFingerprint": self.material_fingerprint,
        }
        if self.phase == DENIED:
            out["denialReason"] = DENIAL_REASON
        return out

    def render_status(self) -> dict[str, Any]:
        shown = self.shown
        return {
            "transferRef": self.transfer_ref,
            "status": shown.status,
            "isTerminal": shown.terminal,
            "isSuccessful": shown.successful,
            "reason": shown.reason,
            "revision": self.revision,
            "fees": self.render_fees(),
        }

    def render_fees(self) -> dict[str, Any]:
        """Assessed while the transfer waits, charged once settled; nothing if it never was."""
        if self.fee is None:
            return dict(NO_FEES)
        if self.phase in (DENIED, FAILED):
            return dict(NOT_CHARGED)
        return {
            "status": "charged" if self.phase == SETTLED else "assessed",
            "reason": "configured_fee",
            **render_fees(self.fee_style.line_shape, self.fee, self.fee_lines, self.currency),
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
