"""How a rule writes what it chose: match rows, their counts, and transfers still awaited.

Every rule ends the same way: the candidate pairs it chose (`chosen`, a condition on its
candidate table) become match rows in one INSERT ... SELECT; one aggregate over the candidate
table (private to the connection, not WAL-logged) says how many rows of each rule were
written, how many of them name a transfer we do not have yet or disagree in amount or status,
and whatever else the rule asks to count (ambiguous anchors, anchors with no candidate). Only
a figure above zero makes a rule read rows back, so a pass over a million clean items sends
four statements per rule: build the candidates, insert, count, drop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    case,
    exists,
    func,
    insert,
    literal,
    null,
    select,
)
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import TRANSFERLESS, backlog
from reconciliation.matching.outcome import MONEY_SUSPECT, STATUS_SUSPECT, MatchTally
from reconciliation.matching.vocabulary import MATCHER
from reconciliation.store.tables import matches
from reconciliation.store.types import UTCDateTime

#: The columns a rule fills; the rest of a match row is for people (reason, unmatching).
MATCH_COLUMNS: Final = (
    "rule",
    "posting_id",
    "transfer_id",
    "notification_id",
    "matched_at",
    "matched_by",
)


@dataclass(slots=True)
class Written:
    """What one rule wrote (rows per rule), and how many candidate rows met each condition."""

    rows_by_rule: Counter[str] = field(default_factory=Counter)
    counts: Counter[str] = field(default_factory=Counter)


def insert_chosen(
    session: Session, cand: Table, chosen: ColumnElement[bool], *, rule: Any, now: datetime
) -> None:
    """The chosen candidate pairs become match rows, in one statement.

    Rows go in the candidate table's order (the anchors' scan order: by id), so the index of
    the anchor column grows at its right edge and the others, whose ids follow time as the
    anchor's do, nearly so: cheaper than in random order.
    """
    columns = cand.c
    session.execute(
        insert(matches).from_select(
            list(MATCH_COLUMNS),
            select(
                rule,
                columns.posting_id if "posting_id" in columns else null(),
                columns.transfer_id,
                columns.notification_id,
                literal(now, UTCDateTime()),
                literal(MATCHER),
            ).where(chosen),
        )
    )


def count_written(
    session: Session,
    cand: Table,
    rule: Any,
    chosen: ColumnElement[bool],
    **conditions: ColumnElement[bool],
) -> Written:
    """Rows written per rule, and how many candidate rows meet each of `conditions`: one
    statement over the candidate table, which is small and private, rather than over matches
    (drivers disagree on INSERT ... SELECT row counts). A rule reads rows back only for the
    conditions that count more than none."""
    written = Written()
    label = case((chosen, rule), else_=None)
    names = list(conditions)
    figures: list[ColumnElement[Any]] = [func.count()]
    figures += [func.sum(case((conditions[name], 1), else_=0)) for name in names]
    query = select(label, *figures).select_from(cand).group_by(label)
    for rule_name, count, *more in session.execute(query):
        if rule_name is not None:
            written.rows_by_rule[str(rule_name)] += int(count)
        for name, value in zip(names, more, strict=True):
            written.counts[name] += int(value or 0)
    return written


def write_chosen(
    session: Session,
    cand: Table,
    chosen: ColumnElement[bool],
    *,
    rule: Any,
    now: datetime,
    tally: MatchTally,
    **conditions: ColumnElement[bool],
) -> Counter[str]:
    """What every rule does with the pairs it chose: match rows (one INSERT), their count,
    the notifications among them awaiting their transfer, and the pairs whose flags ask a
    drift rule to look (read back only when there are some). Returns the counts of
    `conditions` too, so the caller reads its own rows back only when there are some.
    """
    insert_chosen(session, cand, chosen, rule=rule, now=now)
    if "awaits" in cand.c:
        conditions["awaiting"] = and_(chosen, cand.c.awaits == 1)
    if "flags" in cand.c:
        conditions["suspect"] = and_(chosen, cand.c.flags > 0)
    written = count_written(session, cand, rule, chosen, **conditions)
    tally.rows_by_rule.update(written.rows_by_rule)
    if written.counts["awaiting"]:
        queue_transferless(session, cand, chosen, now)
    if written.counts["suspect"]:
        suspects = select(cand.c.posting_id, cand.c.notification_id, cand.c.flags).where(
            conditions["suspect"]
        )
        for posting_id, notification_id, flags in session.execute(suspects):
            note_suspect(tally, int(posting_id), int(notification_id), int(flags))
    return written.counts


def note_suspect(tally: MatchTally, posting_id: int, notification_id: int, flags: int) -> None:
    """A pair just matched whose flags ask a drift rule to look."""
    if flags & STATUS_SUSPECT:
        tally.status_suspects.add(notification_id)
    if flags & MONEY_SUSPECT:
        tally.money_suspects.add(posting_id)


def queue_transferless(
    session: Session, cand: Table, chosen: ColumnElement[bool], now: datetime
) -> None:
    """Notifications just matched that name a transfer we do not have wait for it (backlog)."""
    fresh = (
        select(literal(TRANSFERLESS), cand.c.notification_id, literal(now, UTCDateTime()))
        .where(
            chosen,
            cand.c.awaits == 1,
            ~exists().where(
                backlog.c.kind == TRANSFERLESS, backlog.c.item_id == cand.c.notification_id
            ),
        )
        .distinct()
    )
    session.execute(insert(backlog).from_select(["kind", "item_id", "queued_at"], fresh))
