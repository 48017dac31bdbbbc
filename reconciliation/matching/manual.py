"""A person's decision on an exception: match items by hand, accept one item without a
counterpart, or take a match apart.

Every manual change is a row in `matches` that says who and why (matched_by/reason for a match,
unmatched_by/unmatch_reason for an unmatch), so the audit trail is the table itself; nothing is
deleted. A manual match puts at least two items together; closing one item on its own (a
duplicate notification, a transfer the provider never announced) is a different decision,
"accepted without a counterpart", recorded under its own rule so that no report counts it as a
match. Items a person took apart become 'exception': automatic matching never touches an
exception, so it cannot put them straight back together and undo the decision. A person puts
them together again, or accepts one alone, which hands them back ('unmatched', the row saying
they are decided).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

import structlog
from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from foundation import moment
from reconciliation.matching.backlog import seen
from reconciliation.matching.status import ITEM_TABLES, mark_items
from reconciliation.matching.vocabulary import RULE_ACCEPTED, RULE_MANUAL
from reconciliation.store.models import EXCEPTION, UNMATCHED, Match
from reconciliation.store.tables import matches
from reconciliation.store.types import utcnow

#: Longest name kept for who did it (matches.matched_by is VARCHAR(128)).
ACTOR_MAX: Final = 128

log = structlog.get_logger(__name__)


class ManualMatchError(Exception):
    """The manual change cannot be made as asked; the message says what to do instead."""


def _require(by: str, reason: str) -> tuple[str, str]:
    who, why = by.strip(), reason.strip()
    if not who:
        raise ManualMatchError("say who you are (--by): every manual change records a name")
    if len(who) > ACTOR_MAX:
        raise ManualMatchError(f"--by is {len(who)} characters; at most {ACTOR_MAX} are kept")
    if not why:
        raise ManualMatchError("say why (--reason): the next person reading this match needs it")
    return who, why


def _check_item(session: Session, kind: str, item_id: int) -> None:
    table, column = ITEM_TABLES[kind]
    found = session.execute(select(table.c.id).where(table.c.id == item_id)).scalar()
    if found is None:
        raise ManualMatchError(f"no {kind} has id {item_id}")
    if not seen(session, kind, item_id):
        raise ManualMatchError(
            f"{kind} {item_id} has not been through a reconciliation pass yet: run "
            "`recon reconcile` first (it may well match it by itself)"
        )
    active = session.scalars(
        select(Match.id).where(matches.c[column] == item_id, Match.unmatched_at.is_(None))
    ).first()
    if active is not None:
        raise ManualMatchError(
            f"{kind} {item_id} is already matched (match {active}); "
            f"unmatch it first: recon unmatch {active} --by ... --reason ..."
        )


def manual_match(
    session: Session,
    *,
    posting_ids: Sequence[int] = (),
    transfer_id: int | None = None,
    notification_id: int | None = None,
    by: str,
    reason: str,
    now: datetime | None = None,
) -> list[Match]:
    """Match the given items together, one row per posting (or one row without a posting).

    At least two items: one item alone is not a match, it is `accept_alone`.
    """
    who, why = _require(by, reason)
    named = len(posting_ids) + (transfer_id is not None) + (notification_id is not None)
    if named == 0:
        raise ManualMatchError("name at least two items: --posting, --transfer, --notification")
    if named == 1:
        raise ManualMatchError(
            "a match needs the item and at least one counterpart; to close one item on its "
            "own, accept it without a counterpart (recon accept, or the console's "
            '"Accept without a counterpart")'
        )
    if len(set(posting_ids)) != len(posting_ids):
        raise ManualMatchError("a posting is named twice")
    for posting_id in posting_ids:
        _check_item(session, "posting", posting_id)
    if transfer_id is not None:
        _check_item(session, "transfer", transfer_id)
    if notification_id is not None:
        _check_item(session, "notification", notification_id)
    moment = now or utcnow()
    rows = [
        Match(
            rule=RULE_MANUAL,
            posting_id=posting_id,
            transfer_id=transfer_id,
            notification_id=notification_id,
            matched_at=moment,
            matched_by=who,
            reason=why,
        )
        for posting_id in ([*posting_ids] if posting_ids else [None])
    ]
    session.add_all(rows)
    session.flush()
    items = [("posting", p) for p in posting_ids]
    if transfer_id is not None:
        items.append(("transfer", transfer_id))
    if notification_id is not None:
        items.append(("notification", notification_id))
    # Out of a person's hands again: the row says they are matched; the next pass takes them
    # out of the backlog.
    mark_items(session, items, UNMATCHED)
    log.info("match.manual", matches=[r.id for r in rows], by=who, reason=why)
    return rows


def accept_alone(
    session: Session,
    kind: str,
    item_id: int,
    *,
    by: str,
    reason: str,
    now: datetime | None = None,
) -> Match:
    """Close one item with no counterpart: a person says it needs none, and why.

    One row under RULE_ACCEPTED naming the item alone; like a manual match it takes the item
    out of a person's hands, and `manual_unmatch` takes the decision back.
    """
    who, why = _require(by, reason)
    if kind not in ITEM_TABLES:
        raise ManualMatchError(f"{kind!r} is not an item kind: posting, transfer or notification")
    _check_item(session, kind, item_id)
    row = Match(
        rule=RULE_ACCEPTED,
        posting_id=item_id if kind == "posting" else None,
        transfer_id=item_id if kind == "transfer" else None,
        notification_id=item_id if kind == "notification" else None,
        matched_at=now or utcnow(),
        matched_by=who,
        reason=why,
    )
    session.add(row)
    session.flush()
    mark_items(session, [(kind, item_id)], UNMATCHED)
    log.info("match.accepted_alone", match=row.id, item=f"{kind} {item_id}", by=who, reason=why)
    return row


def items_of(row: Match) -> list[tuple[str, int]]:
    """The (kind, id) items a match row names."""
    named = (
        ("posting", row.posting_id),
        ("transfer", row.transfer_id),
        ("notification", row.notification_id),
    )
    return [(kind, item_id) for kind, item_id in named if item_id is not None]


def manual_unmatch(
    session: Session,
    match_id: int,
    *,
    by: str,
    reason: str,
    now: datetime | None = None,
) -> Match:
    """Take one match row apart; items left in no active row become exceptions."""
    who, why = _require(by, reason)
    row = session.get(Match, match_id)
    if row is None:
        raise ManualMatchError(f"no match has id {match_id}")
    if row.unmatched_at is not None:
        raise ManualMatchError(
            f"match {match_id} was already unmatched by {row.unmatched_by} "
            f"at {moment(row.unmatched_at)}"
        )
    row.unmatched_at = now or utcnow()
    row.unmatched_by = who
    row.unmatch_reason = why
    session.flush()
    for kind, item_id in items_of(row):
        table, column = ITEM_TABLES[kind]
        still = exists().where(
            matches.c[column] == item_id,
            matches.c.unmatched_at.is_(None),
        )
        session.execute(
            update(table)
            .where(table.c.id == item_id, ~still)
            .values(match_status=EXCEPTION)
            .execution_options(synchronize_session=False)
        )
    log.info("match.unmatched", match=match_id, by=who, reason=why)
    return row
