"""Why an item is not matched: its plausible counterparts, and what keeps each one apart.

For one posting, notification or transfer, the counterparts a person would consider are those
that share a provider reference with it (receiptRef, transferRef) and those on the same holding
near it in time. Each is checked the way the matching rules check it (amount in minor units,
unit, the time window, the ledger side the event speaks of, whether it is already matched), and
the reasons are said in words. Two counterparts of one kind that pass every check are an
ambiguity, said as such: that is why the rules set the item aside for a person.

Every query is an index lookup with a LIMIT: the page that shows this must answer in
milliseconds with a million postings in the store.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from foundation import format_money
from reconciliation.matching.vocabulary import EVENT_SIDE, MONEY_EVENTS
from reconciliation.store.tables import (
    holdings,
    locators,
    matches,
    notifications,
    postings,
    transfers,
)

#: Most counterparts one lookup returns: enough to see an ambiguity, never a scan.
LOOKUP_MAX: Final = 10
#: How far beyond the match window to look for near misses (a counterpart just outside the
#: window is exactly the one a person wants to see).
NEAR_MISS_FACTOR: Final = 3
#: Match column per item kind.
MATCH_COLUMN: Final = {
    "posting": "posting_id",
    "notification": "notification_id",
    "transfer": "transfer_id",
}


class CandidateError(Exception):
    """The item asked about does not exist."""


@dataclass(slots=True)
class Item:
    """A posting, notification or transfer, in the fields matching compares."""

    kind: str
    item_id: int
    at: datetime | None
    holding_ref: str | None
    currency: str | None
    amount_minor: int | None
    reference: str
    detail: str
    receipt_ref: str | None = None
    transfer_ref: str | None = None
    side: str | None = None
    holding_id: int | None = None
    account_number: str | None = None
    match_id: int | None = None


@dataclass(slots=True)
class Candidate:
    """A counterpart and the reasons it is not matched with the item (empty: it fits)."""

    item: Item
    reasons: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.reasons


@dataclass(slots=True)
class Explanation:
    """The item, its counterparts, and its active match rows (which can be unmatched)."""

    item: Item
    candidates: list[Candidate]
    active_matches: list[int]
    #: Counterparts near its time already matched to other items and sharing no reference
    #: with it: counted, not listed (a busy holding had a dozen such rows above the one that
    #: mattered).
    elsewhere: int = 0


def _posting_select() -> Any:
    p, h = postings, holdings
    return select(
        p.c.id,
        p.c.posted_at,
        h.c.holding_ref,
        p.c.currency,
        p.c.amount_minor,
        p.c.receipt_ref,
        p.c.side,
        p.c.kind,
        p.c.holding_id,
    ).join(h, h.c.id == p.c.holding_id)


def _posting(row: Any) -> Item:
    return Item(
        kind="posting",
        item_id=row.id,
        at=row.posted_at,
        holding_ref=str(row.holding_ref),
        currency=row.currency,
        amount_minor=row.amount_minor,
        reference=str(row.receipt_ref),
        detail=f"{row.side} · {row.kind}",
        receipt_ref=str(row.receipt_ref),
        side=row.side,
        holding_id=row.holding_id,
    )


def _notification_select() -> Any:
    n = notifications
    return select(
        n.c.id,
        n.c.occurred_at,
        n.c.holding_ref,
        n.c.currency,
        n.c.amount_minor,
        n.c.event_id,
        n.c.event_type,
        n.c.receipt_ref,
        n.c.transfer_ref,
        n.c.account_number,
        n.c.claimed_status,
    )


def _notification(row: Any) -> Item:
    def text(value: Any) -> str | None:
        return str(value) if value is not None else None

    return Item(
        kind="notification",
        item_id=row.id,
        at=row.occurred_at,
        holding_ref=text(row.holding_ref),
        currency=row.currency,
        amount_minor=row.amount_minor,
        reference=row.event_id,
        detail=f"{row.event_type} · {row.claimed_status or 'no status'}",
        receipt_ref=text(row.receipt_ref),
        transfer_ref=text(row.transfer_ref),
        side=EVENT_SIDE.get(row.event_type),
        account_number=row.account_number,
    )


def _transfer_select() -> Any:
    t = transfers
    return select(
        t.c.id,
        func.coalesce(t.c.requested_at, t.c.created_at).label("at"),
        t.c.source_holding_ref,
        t.c.currency,
        t.c.amount_minor,
        t.c.transfer_ref,
        t.c.status,
        t.c.stage,
        t.c.fee_charged_minor,
        t.c.fee_bearer,
    )


def _fee_words(row: Any) -> str:
    """` · fee 25.00 NGN (sender_pays)` when the transfer states a fee, else nothing."""
    if not row.fee_charged_minor:
        return ""
    who = f" ({row.fee_bearer})" if row.fee_bearer else ""
    return f" · fee {format_money(row.fee_charged_minor, row.currency)}{who}"


def _transfer(row: Any) -> Item:
    return Item(
        kind="transfer",
        item_id=row.id,
        at=row.at,
        holding_ref=str(row.source_holding_ref) if row.source_holding_ref else None,
        currency=row.currency,
        amount_minor=row.amount_minor,
        reference=str(row.transfer_ref),
        detail=f"{row.status or 'unknown status'} · {row.stage or 'no stage'}{_fee_words(row)}",
        transfer_ref=str(row.transfer_ref),
    )


def load_item(session: Session, kind: str, item_id: int) -> Item:
    """One item by kind and row id; CandidateError when there is none."""
    if kind == "posting":
        row = session.execute(_posting_select().where(postings.c.id == item_id)).first()
        item = _posting(row) if row else None
    elif kind == "notification":
        row = session.execute(_notification_select().where(notifications.c.id == item_id)).first()
        item = _notification(row) if row else None
    elif kind == "transfer":
        row = session.execute(_transfer_select().where(transfers.c.id == item_id)).first()
        item = _transfer(row) if row else None
    else:
        raise CandidateError(f"kind {kind!r} is not posting, notification or transfer")
    if item is None:
        raise CandidateError(f"no {kind} has id {item_id}")
    return item


def _uuid(text: str | None) -> uuid.UUID | None:
    """A reference kept as text on an Item, back to the UUID its column holds."""
    return uuid.UUID(text) if text else None


def _near(column: Any, at: datetime | None, window_seconds: int) -> Any:
    reach = timedelta(seconds=window_seconds * NEAR_MISS_FACTOR)
    assert at is not None
    return column.between(at - reach, at + reach)


def _counterparts(session: Session, item: Item, window_seconds: int) -> list[Item]:
    found: dict[tuple[str, int], Item] = {}

    def add(query: Any, build: Any) -> None:
        for row in session.execute(query.limit(LOOKUP_MAX)):
            made = build(row)
            found.setdefault((made.kind, made.item_id), made)

    p, n, t = postings, notifications, transfers
    money_events = n.c.event_type.in_(MONEY_EVENTS)
    if item.kind == "posting":
        add(
            _notification_select().where(n.c.receipt_ref == _uuid(item.receipt_ref), money_events),
            _notification,
        )
        numbers = select(locators.c.account_number).where(locators.c.holding_id == item.holding_id)
        add(
            _notification_select().where(
                n.c.account_number.in_(numbers),
                money_events,
                _near(n.c.occurred_at, item.at, window_seconds),
            ),
            _notification,
        )
    elif item.kind == "notification":
        if item.receipt_ref:
            add(_posting_select().where(p.c.receipt_ref == _uuid(item.receipt_ref)), _posting)
        held = select(locators.c.holding_id).where(locators.c.account_number == item.account_number)
        if item.holding_ref:
            held = held.union(
                select(holdings.c.id).where(holdings.c.holding_ref == _uuid(item.holding_ref))
            )  # type: ignore[assignment]
        if item.at is not None:
            add(
                _posting_select().where(
                    p.c.holding_id.in_(held), _near(p.c.posted_at, item.at, window_seconds)
                ),
                _posting,
            )
    else:
        add(
            _notification_select().where(n.c.transfer_ref == _uuid(item.transfer_ref)),
            _notification,
        )
        source = select(holdings.c.id).where(holdings.c.holding_ref == _uuid(item.holding_ref))
        if item.at is not None and item.holding_ref:
            add(
                _posting_select().where(
                    p.c.holding_id.in_(source),
                    p.c.amount_minor == item.amount_minor,
                    _near(p.c.posted_at, item.at, window_seconds),
                ),
                _posting,
            )
    refs = {c.transfer_ref for c in found.values() if c.kind == "notification" and c.transfer_ref}
    if item.kind == "posting" and refs:
        add(
            _transfer_select().where(t.c.transfer_ref.in_([_uuid(r) for r in sorted(refs)])),
            _transfer,
        )
    receipts = {c.receipt_ref for c in found.values() if c.kind == "notification" and c.receipt_ref}
    if item.kind == "transfer" and receipts:
        add(
            _posting_select().where(p.c.receipt_ref.in_([_uuid(r) for r in sorted(receipts)])),
            _posting,
        )
    found.pop((item.kind, item.item_id), None)
    return list(found.values())


def _active_matches(session: Session, kind: str, item_id: int) -> list[int]:
    column = matches.c[MATCH_COLUMN[kind]]
    query = select(matches.c.id).where(column == item_id, matches.c.unmatched_at.is_(None))
    return [int(i) for i in session.scalars(query.order_by(matches.c.id).limit(LOOKUP_MAX))]


def _duration(seconds: float) -> str:
    minutes = int(abs(seconds)) // 60
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def _reasons(item: Item, other: Item, window_seconds: int) -> list[str]:
    reasons: list[str] = []
    if other.match_id is not None:
        reasons.append(f"already matched (match {other.match_id})")
    if item.currency and other.currency and item.currency != other.currency:
        reasons.append(f"unit differs: {other.currency}, not {item.currency}")
    elif (
        item.amount_minor is not None
        and other.amount_minor is not None
        and item.amount_minor != other.amount_minor
    ):
        gap = other.amount_minor - item.amount_minor
        reasons.append(
            f"amount differs: {format_money(other.amount_minor, other.currency)} against "
            f"{format_money(item.amount_minor, item.currency)} "
            f"({format_money(gap, other.currency, signed=True)})"
        )
    if item.at is not None and other.at is not None:
        apart = (other.at - item.at).total_seconds()
        if abs(apart) > window_seconds:
            reasons.append(
                f"outside the window: {_duration(apart)} apart, the window is "
                f"{_duration(window_seconds)}"
            )
    kinds = {item.kind, other.kind}
    if (
        kinds == {"posting", "notification"}
        and item.side
        and other.side
        and item.side != other.side
    ):
        posting = item if item.kind == "posting" else other
        reasons.append(
            f"side: the event speaks of the {'debit' if posting.side == 'credit' else 'credit'} leg, this posting is the {posting.side}"
        )
    return reasons


def explain(session: Session, kind: str, item_id: int, *, window_seconds: int) -> Explanation:
    """The item, its counterparts with the reasons each is apart, and its active matches."""
    item = load_item(session, kind, item_id)
    own = _active_matches(session, kind, item_id)
    found = _counterparts(session, item, window_seconds)
    for other in found:
        active = _active_matches(session, other.kind, other.item_id)
        other.match_id = active[0] if active else None
    partners = [o for o in found if o.match_id is not None and o.match_id in own]
    shown = [
        o for o in found if o.match_id is None or o in partners or _shares_a_reference(item, o)
    ]
    candidates = [
        Candidate(other, [f"matched with it (match {other.match_id})"])
        if other in partners
        else Candidate(other, _reasons(item, other, window_seconds))
        for other in shown
    ]
    for group in ("posting", "notification", "transfer"):
        fitting = [c for c in candidates if c.item.kind == group and c.fits]
        # Two legs of one journal both fit one notification: that is one transfer, not doubt.
        journals = {c.item.receipt_ref for c in fitting} if group == "posting" else set()
        if len(fitting) > 1 and not (group == "posting" and len(journals) == 1):
            for c in fitting:
                c.reasons.append(f"ambiguous: {len(fitting)} {group}s fit equally well")
    candidates.sort(
        key=lambda c: (c.item.match_id not in own, not c.fits, c.item.kind, c.item.item_id)
    )
    return Explanation(item, candidates, own, elsewhere=len(found) - len(shown))


def _shares_a_reference(item: Item, other: Item) -> bool:
    """Whether the two name the same receipt or transfer: a counterpart matched elsewhere is
    then worth showing (it may be the one matched wrongly)."""
    return bool(
        (item.receipt_ref and item.receipt_ref == other.receipt_ref)
        or (item.transfer_ref and item.transfer_ref == other.transfer_ref)
    )
