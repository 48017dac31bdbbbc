"""Fees: the environment's schedule, what one transfer is assessed, and how fees are shown.

The gateway spec describes fee totals and lines on quotes and on the transfer status, four
bearers, and a split that becomes one debit leg plus one receiver-withholding leg, but shows
no element shape and no ledger layout. The sandbox therefore charges fees from a schedule of
its own (flat part plus basis points of the amount, a default bearer, optionally a rate per
bearer) and shows them in the shape the variant names (``ProviderVariant.fee_line_shape``);
docs/decisions.md lists each choice. No schedule means no fee at all, exactly as before.

Every amount is an exact integer of the transfer's minor units; no float is ever involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from sandbox.units import major_units

BEARERS: Final = ("sender_pays", "application_pays", "receiver_pays", "split")
#: The one fee kind the sandbox charges (the spec's "application fee").
APPLICATION_FEE: Final = "application_fee"
#: The word each bearer gets in the `nested` shape's `paidBy`.
PAID_BY: Final = {
    "sender_pays": "sender",
    "application_pays": "application",
    "receiver_pays": "receiver",
    "split": "split",
}
#: Basis points in one whole: 10,000 bp = 100 %.
BASIS: Final = 10_000

#: `journalKind` of fee legs under `fee_journal_kind=distinct`: names recon has never seen.
FEE_DEBIT_KIND: Final = "application_fee_assessment"
WITHHOLDING_KIND: Final = "receiver_fee_withholding"

#: Fee layouts whose legs carry a receipt of their own (sandbox.variants.FeeLayout): with the
#: fee lines naming that receipt, and with nothing linking them to the transfer.
OWN_RECEIPT: Final = "own-receipt"
OWN_RECEIPT_UNLINKED: Final = "own-receipt-unlinked"

NO_FEES: Final[dict[str, Any]] = {
    "status": "not_required",
    "reason": "no_configured_fee",
    "totals": [],
    "lines": [],
}
#: A denied or failed transfer posts nothing, so nothing was charged whatever was assessed.
NOT_CHARGED: Final[dict[str, Any]] = {
    "status": "not_charged",
    "reason": "transfer_not_settled",
    "totals": [],
    "lines": [],
}


class FeeScheduleError(ValueError):
    """A schedule names an unknown bearer or a part that is not a whole number >= 0."""


@dataclass(frozen=True, slots=True)
class FeeRate:
    """A flat part (minor units) plus basis points of the amount."""

    flat_minor_units: int = 0
    basis_points: int = 0

    def fee(self, amount: int) -> int:
        """flat + amount * bp / 10,000, rounded half up, in integers only."""
        return self.flat_minor_units + (amount * self.basis_points + BASIS // 2) // BASIS


@dataclass(frozen=True, slots=True)
class FeeSchedule:
    """One environment's fees; `drift_minor_units` makes the charge differ from the quote.

    The spec says created totals can differ from quoted ones when the assessed material moves;
    the drift plays that: it is added to what a created transfer is charged, never to a quote.
    """

    rate: FeeRate = FeeRate()
    bearer: str = "sender_pays"
    per_bearer: dict[str, FeeRate] = field(default_factory=dict)
    drift_minor_units: int = 0

    def __post_init__(self) -> None:
        for name in (self.bearer, *self.per_bearer):
            if name not in BEARERS:
                raise FeeScheduleError(
                    f"unknown fee bearer {name!r}: choose one of {', '.join(BEARERS)}"
                )
        for rate in (self.rate, *self.per_bearer.values()):
            if rate.flat_minor_units < 0 or rate.basis_points < 0:
                raise FeeScheduleError("fee parts must be whole numbers >= 0")

    def assess(self, amount: int, bearer: str | None, *, charged: bool) -> Assessment | None:
        """What a transfer of `amount` costs under `bearer` (else the default); None if free."""
        chosen = bearer or self.bearer
        fee = self.per_bearer.get(chosen, self.rate).fee(amount)
        if charged:
            fee = max(0, fee + self.drift_minor_units)
        if fee == 0:
            return None
        sender = {"sender_pays": fee, "split": -(-fee // 2)}.get(chosen, 0)
        receiver = {"receiver_pays": fee, "split": fee - sender}.get(chosen, 0)
        return Assessment(chosen, fee, sender, receiver, fee - sender - receiver)

    def to_wire(self) -> dict[str, Any]:
        return {
            "flatMinorUnits": self.rate.flat_minor_units,
            "basisPoints": self.rate.basis_points,
            "bearer": self.bearer,
            "perBearer": {
                name: {"flatMinorUnits": r.flat_minor_units, "basisPoints": r.basis_points}
                for name, r in self.per_bearer.items()
            },
            "driftMinorUnits": self.drift_minor_units,
        }


@dataclass(frozen=True, slots=True)
class Assessment:
    """One transfer's fee and who pays which part; the three shares sum to `fee`."""

    bearer: str
    fee: int
    sender_share: int
    receiver_share: int
    application_share: int


def _whole(key: str, raw: object) -> int:
    if isinstance(raw, bool) or not (
        isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit())
    ):
        raise FeeScheduleError(f"{key} takes a whole number >= 0, not {raw!r}")
    value = int(raw)
    if value < 0:
        raise FeeScheduleError(f"{key} takes a whole number >= 0, not {raw!r}")
    return value


def _drift(raw: object) -> int:
    text = str(raw)
    if isinstance(raw, bool) or not text.lstrip("-").isdigit():
        raise FeeScheduleError(f"drift takes a whole number (may be negative), not {raw!r}")
    return int(text)


def parse_fee_schedule(spec: str) -> FeeSchedule | None:
    """``flat=2500,bp=50,bearer=sender_pays,drift=0,split.flat=100``; empty means no fees."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        return None
    flat = bp = drift = 0
    bearer = "sender_pays"
    per: dict[str, dict[str, int]] = {}
    for item in parts:
        key, sep, raw = item.partition("=")
        owner, dot, part = key.rpartition(".")
        if not sep:
            raise FeeScheduleError(f"bad fee setting {item!r}: expected name=value")
        if dot and part in ("flat", "bp"):
            per.setdefault(owner, {"flat": 0, "bp": 0})[part] = _whole(key, raw)
        elif key == "flat":
            flat = _whole(key, raw)
        elif key == "bp":
            bp = _whole(key, raw)
        elif key == "bearer":
            bearer = raw
        elif key == "drift":
            drift = _drift(raw)
        else:
            raise FeeScheduleError(
                f"bad fee setting {item!r}: names are flat, bp, bearer, drift, <bearer>.flat, "
                "<bearer>.bp"
            )
    return FeeSchedule(
        FeeRate(flat, bp),
        bearer,
        {name: FeeRate(v["flat"], v["bp"]) for name, v in per.items()},
        drift,
    )


def schedule_from_wire(body: dict[str, Any]) -> FeeSchedule:
    """The control API's JSON form (``FeeSchedule.to_wire``); every member optional."""
    per = body.get("perBearer") or {}
    if not isinstance(per, dict):
        raise FeeScheduleError("perBearer must be an object of bearer -> rate")

    def rate(obj: Any, where: str) -> FeeRate:
        if not isinstance(obj, dict):
            raise FeeScheduleError(f"{where} must be an object")
        return FeeRate(
            _whole(f"{where}flatMinorUnits", obj.get("flatMinorUnits", 0)),
            _whole(f"{where}basisPoints", obj.get("basisPoints", 0)),
        )

    return FeeSchedule(
        rate(body, ""),
        str(body.get("bearer", "sender_pays")),
        {str(name): rate(r, f"perBearer.{name}.") for name, r in per.items()},
        _drift(body.get("driftMinorUnits", 0)),
    )


class FeeStyle(NamedTuple):
    """The variant's fee choices, fixed on a transfer when it is created."""

    layout: str = "same-journal"
    journal_kind: str = "transfer_settlement"
    line_shape: str = "flat"

    @property
    def own_receipt(self) -> bool:
        """Fee legs posted under a receipt of their own, not the transfer's."""
        return self.layout in (OWN_RECEIPT, OWN_RECEIPT_UNLINKED)

    @property
    def names_receipt(self) -> bool:
        """The status read's fee lines name the receipt their leg was posted under."""
        return self.layout == OWN_RECEIPT

    def kind_of(self, leg: str) -> str:
        """`journalKind` of a fee leg ("debit" or "withholding") under this style."""
        if self.journal_kind == "transfer_settlement":
            return "transfer_settlement"
        return WITHHOLDING_KIND if leg == "withholding" else FEE_DEBIT_KIND


# --- how fees are shown ---------------------------------------------------------------


@dataclass(slots=True)
class FeeLine:
    """One evidence line: which leg, on which holding, how much; and, once posted under a
    receipt of its own that the provider names (`own-receipt`), that receipt."""

    leg: str  # "debit" | "withholding"
    holding_ref: str
    amount: int
    receipt_ref: str | None = None


def fee_lines(
    assessment: Assessment, source_ref: str, destination_ref: str, application_ref: str
) -> list[FeeLine]:
    """The evidence lines of an assessment: one per share that is not zero."""
    lines = [
        FeeLine("debit", source_ref, assessment.sender_share),
        FeeLine("debit", application_ref, assessment.application_share),
        FeeLine("withholding", destination_ref, assessment.receiver_share),
    ]
    return [line for line in lines if line.amount]


def render_element(shape: str, bearer: str, amount: int, currency: str) -> dict[str, Any]:
    """One totals element in the variant's shape (`flat`, `nested`, `major`)."""
    unit = {"kind": "fiat", "currency": currency}
    if shape == "nested":
        return {
            "feeKind": APPLICATION_FEE,
            "paidBy": PAID_BY[bearer],
            "amount": {"minorUnits": str(amount), "unit": unit},
        }
    if shape == "major":
        return {
            "type": APPLICATION_FEE,
            "bearer": bearer,
            "amount": major_units(amount, currency),
            "currency": currency,
        }
    return {
        "kind": APPLICATION_FEE,
        "bearer": bearer,
        "amountMinorUnits": str(amount),
        "valueUnit": unit,
    }


def receipt_member(shape: str, receipt_ref: str | None) -> dict[str, Any]:
    """Where a line names the receipt its leg was posted under, in each shape: `receiptRef`
    (`flat`), a `posting` object (`nested`), `postingReceiptRef` (`major`); none unposted."""
    if receipt_ref is None:
        return {}
    if shape == "nested":
        return {"posting": {"receiptRef": receipt_ref}}
    if shape == "major":
        return {"postingReceiptRef": receipt_ref}
    return {"receiptRef": receipt_ref}


def render_fees(
    shape: str, assessment: Assessment, lines: list[FeeLine], currency: str
) -> dict[str, Any]:
    """`totals` (one per fee kind) and `lines` (one per leg, with `leg` and `holdingRef`)."""
    return {
        "totals": [render_element(shape, assessment.bearer, assessment.fee, currency)],
        "lines": [
            render_element(shape, assessment.bearer, line.amount, currency)
            | {"leg": line.leg, "holdingRef": line.holding_ref}
            | receipt_member(shape, line.receipt_ref)
            for line in lines
        ],
    }
