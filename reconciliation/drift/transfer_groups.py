"""Does a transfer's group of legs add up, for who pays its fee?

Every leg that shares a transfer's receiptRef is matched to the transfer (its principal legs,
its fee debits, a receiver's withholding: whatever their journalRef or journalKind), so the
legs are checked as one group and no leg is compared with the transfer's amount alone. For a
transfer of amount A and fee F, on the holdings whose legs recon has read:

- the source is debited A plus the sender's share of F (net of any credit there);
- the destination is credited A minus the receiver's share of F (net of any debit there,
  such as a withholding leg);
- the shares are what the bearer says: `sender_pays` F and 0, `receiver_pays` 0 and F,
  `application_pays` 0 and 0 (the application's own fee holding pays F, when recon reads it),
  `split` any two shares from 0 to F that sum to F; an unknown bearer, any of those.

An unknown fee (a status not read yet, a fee element recon could not read) cannot be checked
for its size: the shares then only have to be what the bearer allows (never negative). A
holding none of whose legs recon has read yet is left out: it is checked when they arrive.
Amounts are integers of one unit; legs in another unit are unit_mismatch's, not summed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from foundation import format_money
from upstream import APPLICATION_PAYS, RECEIVER_PAYS, SENDER_PAYS, SPLIT

#: Who a leg's holding is in the transfer.
SOURCE: Final = "source"
DESTINATION: Final = "destination"
OTHER: Final = "other"


@dataclass(slots=True)
class GroupLeg:
    """One posting of a transfer's group, as the arithmetic needs it."""

    posting_id: int
    holding_ref: str
    side: str
    amount_minor: int
    currency: str


@dataclass(slots=True)
class TransferGroup:
    """A transfer (or a completed-transfer notification without one) and its legs."""

    amount_minor: int
    currency: str | None
    source_ref: str | None
    dest_ref: str | None
    fee_minor: int | None
    bearer: str | None
    legs: list[GroupLeg] = field(default_factory=list)

    def role(self, holding_ref: str) -> str:
        if holding_ref == self.source_ref:
            return SOURCE
        if self.dest_ref is None or holding_ref == self.dest_ref:
            return DESTINATION
        return OTHER

    def outflow(self) -> dict[str, int]:
        """Net debit per role (credits count negative), for the roles that have legs."""
        net: dict[str, int] = {}
        for leg in self.legs:
            signed = leg.amount_minor if leg.side == "debit" else -leg.amount_minor
            role = self.role(leg.holding_ref)
            net[role] = net.get(role, 0) + signed
        return net


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the group's legs show against what they should: None when it adds up."""

    sender_share: int | None
    receiver_share: int | None
    other_outflow: int | None
    reason: str


def _allowed(bearer: str | None, fee: int | None) -> tuple[range | None, range | None]:
    """The sender's and receiver's shares the bearer allows (None: no bound, >= 0)."""
    zero = range(0, 1)
    if fee is None:
        any_share = None
        return {
            SENDER_PAYS: (any_share, zero),
            RECEIVER_PAYS: (zero, any_share),
            APPLICATION_PAYS: (zero, zero),
        }.get(bearer or "", (any_share, any_share))
    exact = range(fee, fee + 1)
    up_to = range(0, fee + 1)
    return {
        SENDER_PAYS: (exact, zero),
        RECEIVER_PAYS: (zero, exact),
        APPLICATION_PAYS: (zero, zero),
        SPLIT: (up_to, up_to),
    }.get(bearer or "", (up_to, up_to))


def _fits(share: int | None, allowed: range | None) -> bool:
    if share is None:
        return True
    return share >= 0 if allowed is None else share in allowed


def _expected(share: str, allowed: range | None, unit: str | None) -> str:
    """What the bearer allows a share to be, in words with the figure."""
    if allowed is None:
        return f"the {share} share is unknown but never negative"
    if len(allowed) == 1:
        value = allowed[0]
        if value == 0:
            return f"the {share} pays no part of the fee"
        return f"the {share} pays the fee, {format_money(value, unit)}"
    return f"the {share} pays at most {format_money(allowed[-1], unit)} of the fee"


def _found(role: str, share: int, unit: str | None) -> str:
    """What the legs on one holding show, naming a leg that is absent."""
    if role == SOURCE:
        if share == 0:
            return "the source was debited the amount alone: no fee debit on the source"
        more = "more" if share > 0 else "less"
        return f"the source was debited {format_money(abs(share), unit)} {more} than the amount"
    if share == 0:
        return "the destination was credited the whole amount: no withholding on the destination"
    less = "less" if share > 0 else "more"
    return f"the destination was credited {format_money(abs(share), unit)} {less} than the amount"


def check(group: TransferGroup) -> Verdict | None:
    """None when the group adds up for its bearer and fee; else what it shows, and why not.

    The reason names each holding whose legs are wrong, what they show (a fee debit or a
    withholding that is absent, a share that differs) and what the bearer allows, with the
    figures. A group with a leg in another unit is not judged here: that leg is a
    unit_mismatch, and what the rest adds up to says nothing more (one cause, one alert).
    """
    if group.currency is not None and any(leg.currency != group.currency for leg in group.legs):
        return None
    unit = group.currency
    net = group.outflow()
    sender = net[SOURCE] - group.amount_minor if SOURCE in net else None
    receiver = group.amount_minor + net[DESTINATION] if DESTINATION in net else None
    other = net.get(OTHER)
    sender_ok, receiver_ok = _allowed(group.bearer, group.fee_minor)
    who = group.bearer or "an unknown bearer"
    problems = []
    if sender is not None and not _fits(sender, sender_ok):
        problems.append(
            f"the source's debit: {_found(SOURCE, sender, unit)}, where under {who} "
            f"{_expected('sender', sender_ok, unit)}"
        )
    if receiver is not None and not _fits(receiver, receiver_ok):
        problems.append(
            f"the destination's credit: {_found(DESTINATION, receiver, unit)}, where under "
            f"{who} {_expected('receiver', receiver_ok, unit)}"
        )
    fee = group.fee_minor
    if sender is not None and receiver is not None and fee is not None and not problems:
        # Each bearer but split fixes both shares already; split and an unknown bearer fix
        # only their sum (an unknown bearer may be application_pays: 0 from the two holdings).
        whole = {fee} if group.bearer == SPLIT else {0, fee}
        if sender + receiver not in whole:
            wanted = " or ".join(format_money(v, unit) for v in sorted(whole))
            absent = [
                leg
                for leg, share in (
                    ("no fee debit on the source", sender),
                    ("no withholding on the destination", receiver),
                )
                if share == 0
            ]
            problems.append(
                f"the two shares of the fee: the sender's {format_money(sender, unit)} and the "
                f"receiver's {format_money(receiver, unit)} make "
                f"{format_money(sender + receiver, unit)}, not {wanted}"
                + "".join(f" ({leg})" for leg in absent)
            )
    if other is not None and fee is not None and group.bearer == APPLICATION_PAYS and other != fee:
        problems.append(
            f"the application's fee debit: {format_money(other, unit)}, not the fee "
            f"{format_money(fee, unit)}"
        )
    if not problems:
        return None
    return Verdict(sender, receiver, other, "; and ".join(problems))


def describe_verdict(group: TransferGroup, verdict: Verdict) -> dict[str, object]:
    """The figures of a group that does not add up, for the alert's evidence."""
    return {
        "amountMinor": group.amount_minor,
        "currency": group.currency,
        "feeMinor": group.fee_minor,
        "bearer": group.bearer,
        "senderShareMinor": verdict.sender_share,
        "receiverShareMinor": verdict.receiver_share,
        "otherHoldingsOutflowMinor": verdict.other_outflow,
        "doesNotAddUp": verdict.reason,
    }


def subject_of(label: str, group: TransferGroup, verdict: Verdict) -> str:
    """`transfer X of 2,000.00 NGN (fee 25.00 NGN, sender_pays) does not add up: the source's
    debit: the source was debited the amount alone: no fee debit on the source, ...`."""
    unit = group.currency
    fee = "fee unknown" if group.fee_minor is None else f"fee {format_money(group.fee_minor, unit)}"
    return (
        f"{label} of {format_money(group.amount_minor, unit)} ({fee}, "
        f"{group.bearer or 'bearer unknown'}) does not add up: {verdict.reason}"
    )
