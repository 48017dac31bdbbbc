"""Fee totals and lines, read whatever shape their elements take.

The gateway spec shows that quotes and transfer statuses carry fee `totals` and `lines`, but
not the shape of one element, nor the words it uses for who pays. So each element is read by
what it plausibly says rather than by one guessed layout:

- the amount: `amountMinorUnits` (digits), `minorUnits` at any depth under `amount`, or
  `amount` as a major-unit decimal beside a `currency` (exact, through foundation.money);
- the unit: `valueUnit`/`unit` objects (at any depth under `amount` too) or a `currency`;
- the kind: `kind`, `feeKind` or `type`;
- who pays: `bearer`, `paidBy` or `payer`, normalised to the spec's four bearers.

An element none of these read (no amount, an amount that is not exact, no unit) is never an
error: it is kept as it came, and the fee it belongs to is then unknown rather than guessed.
Amounts of different units are never added together: `charged_in` sums one unit only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from foundation import AmountError, major_to_minor, parse_minor_units

#: The spec's four bearers (fee instruction `bearer`), as recon stores them.
SENDER_PAYS: Final = "sender_pays"
RECEIVER_PAYS: Final = "receiver_pays"
APPLICATION_PAYS: Final = "application_pays"
SPLIT: Final = "split"
BEARERS: Final = (SENDER_PAYS, APPLICATION_PAYS, RECEIVER_PAYS, SPLIT)

#: The instruction kind recon sends with a bearer (the spec's `request_application_fee`).
APPLICATION_FEE_INSTRUCTION: Final = "request_application_fee"

#: More than one fee kind in one transfer's totals: its fee is reported under this kind.
MIXED_KINDS: Final = "mixed"

#: Words that say who pays, in the order they are tried (the first found decides): `split`
#: before the parties, since "split between sender and receiver" names both.
_BEARER_WORDS: Final = (
    (SPLIT, ("split", "shared", "both")),
    (SENDER_PAYS, ("sender", "payer", "source", "originator")),
    (RECEIVER_PAYS, ("receiver", "recipient", "beneficiary", "destination", "payee")),
    (APPLICATION_PAYS, ("application", "platform", "app", "merchant")),
)

_KIND_KEYS: Final = ("kind", "feeKind", "type")
_BEARER_KEYS: Final = ("bearer", "paidBy", "payer")
_UNIT_KEYS: Final = ("valueUnit", "unit")


def bearer_of(word: object) -> str | None:
    """One of BEARERS for a provider's word (`sender`, `paidBy: receiver`, `split`), or None."""
    if not isinstance(word, str):
        return None
    text = word.strip().lower().replace("-", "_")
    if text in BEARERS:
        return text
    for bearer, words in _BEARER_WORDS:
        if any(w in text.split("_") for w in words):
            return bearer
    return None


class FeeItem(msgspec.Struct, frozen=True, kw_only=True):
    """One element of `totals` or `lines` that could be read."""

    amount_minor: int
    currency: str
    kind: str | None = None
    bearer: str | None = None
    leg: str | None = None
    holding_ref: str | None = None


class FeeReading(msgspec.Struct, frozen=True, kw_only=True):
    """What a fee object's `totals` and `lines` say, and what could not be read."""

    totals: tuple[FeeItem, ...] = ()
    lines: tuple[FeeItem, ...] = ()
    unreadable: tuple[object, ...] = ()

    @property
    def readable(self) -> bool:
        """Every element was read: the fee figures can be trusted."""
        return not self.unreadable

    def charged_in(self, currency: str | None) -> int | None:
        """The fee in `currency`: its totals added up (its lines when it has no totals).

        None when some element could not be read (the fee is unknown, not smaller). Elements
        in other units are left out, never converted. Without a `currency` (a transfer whose
        material recon never saw) the fee is added up only when its elements share one unit.
        """
        if not self.readable:
            return None
        items = self.totals or self.lines
        if currency is None:
            units = {item.currency for item in items}
            if len(units) > 1:
                return None
            currency = units.pop() if units else None
        return sum(item.amount_minor for item in items if item.currency == currency)

    @property
    def bearer(self) -> str | None:
        """The bearer every element that names one agrees on; None when none does or they
        disagree."""
        named = {item.bearer for item in self.totals + self.lines if item.bearer is not None}
        return named.pop() if len(named) == 1 else None

    @property
    def kind(self) -> str | None:
        """The fee's kind (MIXED_KINDS when the totals name several)."""
        kinds = {item.kind for item in self.totals or self.lines if item.kind is not None}
        if not kinds:
            return None
        return kinds.pop() if len(kinds) == 1 else MIXED_KINDS


def _text(element: Mapping[str, object], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = element.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _currency(value: object, *, unit: bool = False) -> str | None:
    """The unit's name: a `currency` member, or one under a value-unit object (`valueUnit`,
    `unit`, at any depth under `amount`). `unit`: `value` is a value-unit object itself."""
    if not isinstance(value, Mapping):
        return None
    currency = value.get("currency")
    if isinstance(currency, str) and currency:
        return currency.upper()
    for key in _UNIT_KEYS:
        found = _currency(value.get(key), unit=True)
        if found is not None:
            return found
    found = _currency(value.get("amount"))
    if found is not None or not unit:
        return found
    # A unit that is not fiat is named by its asset (else its kind), so a fee in another unit
    # never adds into a fiat total. Only inside a unit object: an element's own `kind` is the
    # fee's kind.
    asset, kind = value.get("asset"), value.get("kind")
    if isinstance(asset, str) and asset:
        return asset
    return kind if isinstance(kind, str) and kind and kind != "fiat" else None


def _minor_units(value: object) -> str | int | None:
    """`minorUnits` (or `amountMinorUnits`) at any depth under an amount object."""
    if not isinstance(value, Mapping):
        return None
    for key in ("minorUnits", "amountMinorUnits"):
        if key in value:
            found = value[key]
            return found if isinstance(found, (str, int)) else None
    for inner in value.values():
        found = _minor_units(inner)
        if found is not None:
            return found
    return None


def _amount(element: Mapping[str, object], currency: str) -> int:
    """The element's amount in minor units of `currency`; AmountError when it cannot be exact."""
    minor = element.get("amountMinorUnits")
    if minor is None:
        minor = _minor_units(element.get("amount"))
    if minor is not None:
        if isinstance(minor, bool):
            raise AmountError(f"minor units must be digits, got {minor!r}")
        return parse_minor_units(str(minor))
    major = element.get("amount")
    if isinstance(major, (str, int)) and not isinstance(major, bool):
        return major_to_minor(major, currency)
    raise AmountError("no amount: neither amountMinorUnits, amount.minorUnits nor amount")


def read_item(element: object) -> FeeItem | None:
    """One element as a FeeItem, or None when it cannot be read exactly."""
    if not isinstance(element, Mapping):
        return None
    currency = _currency(element)
    if currency is None:
        return None
    try:
        amount = _amount(element, currency)
    except AmountError:
        return None
    return FeeItem(
        amount_minor=amount,
        currency=currency,
        kind=_text(element, _KIND_KEYS),
        bearer=bearer_of(_text(element, _BEARER_KEYS)),
        leg=_text(element, ("leg",)),
        holding_ref=_text(element, ("holdingRef",)),
    )


def read_fees(totals: Iterable[object], lines: Iterable[object]) -> FeeReading:
    """Every element of `totals` and `lines` read, the ones that cannot be kept raw."""
    read: dict[str, list[FeeItem]] = {"totals": [], "lines": []}
    unreadable: list[object] = []
    for name, elements in (("totals", totals), ("lines", lines)):
        for element in elements:
            item = read_item(element)
            if item is None:
                unreadable.append(element)
            else:
                read[name].append(item)
    return FeeReading(
        totals=tuple(read["totals"]), lines=tuple(read["lines"]), unreadable=tuple(unreadable)
    )


#: Key endings (lower case) under which an element names a posting: `receiptRef`,
#: `postingReceiptRef`, `posting: {receiptRef}`, `lineRef`, `evidence: [{receiptRef}]`...
_POSTING_KEY_ENDINGS: Final = ("receiptref", "lineref")


def posting_refs(elements: Iterable[object]) -> tuple[str, ...]:
    """Every receipt or line ref the elements name, at any depth and under any key ending in
    `receiptRef` or `lineRef`, sorted and without repeats.

    The spec shows no member by which a fee line names the posting that took the fee, so a
    provider that posts fees under a receipt of their own may name it in any of these; a value
    that is not text is not a reference and is skipped.
    """
    found: set[str] = set()
    stack = list(elements)
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            for key, inner in value.items():
                names_posting = isinstance(key, str) and key.lower().endswith(_POSTING_KEY_ENDINGS)
                if names_posting and isinstance(inner, str) and inner:
                    found.add(inner)
                else:
                    stack.append(inner)
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return tuple(sorted(found))


def fee_instruction(bearer: str) -> dict[str, object]:
    """The `feeInstruction` recon sends for a bearer. Its inner names are not shown by the
    spec: `kind` and `bearer` are our reading of its words (docs/decisions.md, "Fees")."""
    if bearer not in BEARERS:
        raise ValueError(f"fee bearer {bearer!r} is not one of {', '.join(BEARERS)}")
    return {"kind": APPLICATION_FEE_INSTRUCTION, "bearer": bearer}
