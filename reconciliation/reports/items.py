"""Where each item stands: the one definition of matched, waiting and exception, in SQL.

Every figure of the report (totals per holding, the headline numbers, exceptions by age, the
list of open items) is a count or a sum over the selects built here, so no two figures can
define "unmatched" differently. docs/reports.md says the same in prose; `legend.LEGEND` says it
in every format.

An item is a posting (by its `postedAt`), a money notification (by its `occurredAt`) or a
transfer we asked for (by its request time) whose own time falls in the window. It is in
exactly one state:

- matched: an active match links it to its counterparts, or it needs none (a refused transfer
  moved nothing, so nothing can match it);
- accepted: a person accepted it without a counterpart, with a reason (`recon accept`): a
  decision, not a match, so it is counted apart;
- waiting: not matched yet, and not late: its counterpart may still arrive. That is a posting or
  notification younger than the notification grace (counted from the later of the provider's
  time and ours, as the drift rules count it), a transfer still in flight at the provider and
  not past its finality deadline, or one that finished within the grace;
- exception: not matched, and a person must look: matching marked it an exception (a choice
  only a person can make), it outlived the grace without a counterpart, or it is a transfer
  still in flight past its finality deadline (late as `reconciliation.transfers.lateness`
  defines it, the definition the `finality_overdue` alert uses).

An item moves waiting -> matched when a pass matches it, waiting -> exception when the grace
(or a transfer's finality deadline) runs out first, exception -> matched when its counterpart
arrives late or a person matches it, exception -> accepted when a person accepts it alone, and
matched or accepted -> exception when a person takes the decision apart.

A transfer's outcome comes from the provider's own flags (isTerminal, isSuccessful), never
from the status words, which differ between providers: not terminal is in flight; terminal and
successful is settled; terminal and unsuccessful is refused when the gateway denied it at
creation (the spec's `ReservationDenied` stage) and failed otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import ColumnElement, Select, case, exists, func, select

from reconciliation.matching.backlog import active_row
from reconciliation.matching.vocabulary import MONEY_EVENTS, RULE_ACCEPTED
from reconciliation.policy import ReconcilePolicy
from reconciliation.reports.filters import for_holding, in_window
from reconciliation.reports.model import (
    ACCEPTED,
    AGEING_BUCKETS,
    EXCEPTION,
    FAILED,
    IN_FLIGHT,
    MATCHED,
    REFUSED,
    SETTLED,
    WAITING,
    ReportWindow,
)
from reconciliation.store.models import EXCEPTION as MARKED_EXCEPTION
from reconciliation.store.tables import holdings, matches, notifications, postings, transfers
from reconciliation.transfers.lateness import late
from upstream import Stage

#: The finality deadline the report assumes when its caller names none: the policy's default.
FINALITY_SECONDS = ReconcilePolicy().finality_deadline_seconds


def later_of(first: Any, second: Any) -> Any:
    """SQL: the later of two times (portable: SQLite has no GREATEST)."""
    return case((second > first, second), else_=first)


def age_bucket(column: Any, until: datetime) -> Any:
    """SQL: the ageing bucket label of a time, as of `until` (whole days of age)."""
    whens = [
        (column > until - timedelta(days=last + 1), label)
        for label, _, last in AGEING_BUCKETS
        if last is not None
    ]
    return case(*whens, else_=AGEING_BUCKETS[-1][0])


def transfer_outcome() -> Any:
    """SQL: settled, in flight, refused or failed, from the provider's flags."""
    t = transfers
    return case(
        (t.c.is_terminal.is_not(True), IN_FLIGHT),
        (t.c.is_successful.is_(True), SETTLED),
        (t.c.stage == Stage.RESERVATION_DENIED, REFUSED),
        else_=FAILED,
    )


def _refused() -> ColumnElement[bool]:
    t = transfers
    return (
        (t.c.is_terminal.is_(True))
        & (t.c.is_successful.is_not(True))
        & (t.c.stage == Stage.RESERVATION_DENIED)
    )


def accepted_row(stream: str, item_id: Any) -> ColumnElement[bool]:
    """SQL: an active row of a person's "accepted without a counterpart" names this item."""
    column = {"posting": "posting_id", "notification": "notification_id"}.get(stream, "transfer_id")
    return exists().where(
        matches.c[column] == item_id,
        matches.c.unmatched_at.is_(None),
        matches.c.rule == RULE_ACCEPTED,
    )


def _state(stream: str, item_id: Any, marked: Any, heard: Any, cutoff: datetime) -> Any:
    """SQL: matched, accepted, waiting or exception (the module docstring is the definition)."""
    return case(
        (accepted_row(stream, item_id), ACCEPTED),
        (active_row(stream, item_id), MATCHED),
        (marked == MARKED_EXCEPTION, EXCEPTION),
        (heard <= cutoff, EXCEPTION),
        else_=WAITING,
    )


#: The columns of every stream's items, in order: item_id, reference, holding_ref, currency,
#: amount, at (the item's own time), detail (a posting's side, a notification's event type, a
#: transfer's outcome), marked (its match_status), state.
ITEM_COLUMNS: Final = (
    "item_id",
    "reference",
    "holding_ref",
    "currency",
    "amount",
    "at",
    "detail",
    "marked",
    "state",
)


@dataclass(frozen=True, slots=True)
class _Stream:
    """What one stream brings to the one items select: its columns (in `ITEM_COLUMNS` order),
    the tables they come from, the column holding its holding's row id, its own conditions."""

    columns: tuple[Any, ...]
    source: Any
    holding_id: Any
    only: tuple[ColumnElement[bool], ...] = ()

    @property
    def at(self) -> Any:
        return self.columns[ITEM_COLUMNS.index("at")]


def _posting(cutoff: datetime) -> _Stream:
    p, h = postings, holdings
    heard = later_of(p.c.posted_at, p.c.ingested_at)
    return _Stream(
        columns=(
            p.c.id,
            p.c.receipt_ref,
            h.c.holding_ref,
            p.c.currency,
            p.c.amount_minor,
            p.c.posted_at,
            p.c.side,
            p.c.match_status,
            _state("posting", p.c.id, p.c.match_status, heard, cutoff),
        ),
        source=p.join(h, h.c.id == p.c.holding_id),
        holding_id=p.c.holding_id,
    )


def _notification(cutoff: datetime) -> _Stream:
    n, h = notifications, holdings
    heard = later_of(n.c.occurred_at, n.c.created_at)
    return _Stream(
        columns=(
            n.c.id,
            n.c.event_id,
            n.c.holding_ref,
            n.c.currency,
            n.c.amount_minor,
            n.c.occurred_at,
            n.c.event_type,
            n.c.match_status,
            _state("notification", n.c.id, n.c.match_status, heard, cutoff),
        ),
        source=n.outerjoin(h, h.c.holding_ref == n.c.holding_ref),
        holding_id=h.c.id,
        only=(n.c.event_type.in_(MONEY_EVENTS),),
    )


def _transfer(cutoff: datetime, until: datetime, finality_seconds: int) -> _Stream:
    t, h = transfers, holdings
    asked = func.coalesce(t.c.requested_at, t.c.created_at)
    finished = later_of(asked, func.coalesce(t.c.terminal_at, t.c.updated_at))
    state = case(
        (accepted_row("transfer", t.c.id), ACCEPTED),
        (active_row("transfer", t.c.id), MATCHED),
        (_refused(), MATCHED),
        (t.c.match_status == MARKED_EXCEPTION, EXCEPTION),
        (late(until, finality_seconds, t), EXCEPTION),
        (t.c.is_terminal.is_not(True), WAITING),
        (finished <= cutoff, EXCEPTION),
        else_=WAITING,
    )
    return _Stream(
        columns=(
            t.c.id,
            t.c.transfer_ref,
            t.c.source_holding_ref,
            t.c.currency,
            t.c.amount_minor,
            asked,
            transfer_outcome(),
            t.c.match_status,
            state,
        ),
        source=t.outerjoin(h, h.c.holding_ref == t.c.source_holding_ref),
        holding_id=h.c.id,
    )


def classified(
    stream: str,
    window: ReportWindow,
    holding_id: int | None,
    grace_seconds: int,
    finality_seconds: int = FINALITY_SECONDS,
) -> Select[Any]:
    """Every item of `stream` in the window, with the columns every figure is built from
    (`ITEM_COLUMNS`): one select, whichever stream supplies its columns."""
    cutoff = window.until - timedelta(seconds=grace_seconds)
    if stream == "posting":
        found = _posting(cutoff)
    elif stream == "notification":
        found = _notification(cutoff)
    elif stream == "transfer":
        found = _transfer(cutoff, window.until, finality_seconds)
    else:
        raise ValueError(f"stream {stream!r} is not one of posting, notification, transfer")
    named = zip(ITEM_COLUMNS, found.columns, strict=True)
    return (
        select(*(column.label(name) for name, column in named))
        .select_from(found.source)
        .where(*found.only, in_window(found.at, window), for_holding(found.holding_id, holding_id))
    )


def why_open(stream: str, state: str, detail: str | None, marked: str | None) -> str:
    """A few words on why an unmatched item is where it is, for the list under the figures."""
    if state == EXCEPTION:
        if marked == MARKED_EXCEPTION:
            return "a person must decide (recon match or recon accept)"
        if stream == "transfer" and detail == IN_FLIGHT:
            return "late: still in flight past its finality deadline"
        if stream == "posting" and detail == "debit":
            # Debits are notified only as a transfer's TRANSACTION_COMPLETED: one that nothing
            # names may be a fee posted under a receipt of its own that joined no transfer.
            return (
                "no notification or transfer explains it within the grace (a fee leg that "
                "joined no transfer: its fee_unexplained alert lists the candidates)"
            )
        counterpart = {"posting": "notification", "notification": "posting"}.get(
            stream, "posting or notification"
        )
        return f"no {counterpart} within the grace"
    if stream == "transfer" and detail == IN_FLIGHT:
        return "in flight at the provider"
    if stream == "posting":
        return "waiting for its notification or transfer"
    if stream == "notification":
        return "waiting for its posting"
    return "waiting for its posting or notification"
