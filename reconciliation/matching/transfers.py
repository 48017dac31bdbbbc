"""Rule 1 anchored on transfers: what the postings' side cannot see.

- A transfer we learned of after its legs matched (imported late, or polled late) is attached
  to the rows of the notification that names it (the backlog keeps those notifications as
  'transferless' until then).
- A failed transfer posts nothing: its TRANSACTION_FAILED notification is its only counterpart.
  Two failure notices for one transfer is an ambiguity.
- A denied transfer moved nothing and is never notified: it needs no counterpart, so it never
  waits in the backlog (reports count it as reconciled). If a notification claims it completed,
  that is a status contradiction, which a drift rule reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    exists,
    func,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import TRANSFERLESS, active_row, backlog
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.status import group_ambiguities
from reconciliation.matching.vocabulary import FAILED_EVENTS, RULE_TRANSFER_REF, STATUS_DENIED
from reconciliation.matching.writing import write_chosen
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import matches, notifications, transfers


def attach_transfers(session: Session) -> set[int]:
    """Put newly known transfers on the rows of 'transferless' notifications naming them.

    Returns the notifications whose rows now name a transfer: new pairs for the drift rules.
    """
    t, n, m, b = transfers, notifications, matches, backlog
    waiting = (
        select(b.c.item_id)
        .join(n, n.c.id == b.c.item_id)
        .join(t, t.c.transfer_ref == n.c.transfer_ref)
        .where(b.c.kind == TRANSFERLESS, t.c.match_status != EXCEPTION)
    )
    # Driven by the backlog (short), not by the rows without a transfer (every inbound credit).
    candidates = [int(i) for i in session.scalars(waiting)]
    if not candidates:
        return set()
    transfer_of = (
        select(t.c.id)
        .join(n, n.c.transfer_ref == t.c.transfer_ref)
        .where(n.c.id == m.c.notification_id)
        .scalar_subquery()
    )
    attached: set[int] = set()
    for batch in chunks(candidates):
        open_rows = (
            m.c.transfer_id.is_(None),
            m.c.unmatched_at.is_(None),
            m.c.notification_id.in_(batch),
        )
        attached |= {int(i) for i in session.scalars(select(m.c.notification_id).where(*open_rows))}
        session.execute(
            update(m)
            .where(*open_rows)
            .values(transfer_id=transfer_of, rule=RULE_TRANSFER_REF)
            .execution_options(synchronize_session=False)
        )
    return attached


def failure_candidates(
    anchors: Sequence[ColumnElement[bool]], unseen_after: int | None = None
) -> Select[tuple[int, int, int]]:
    """Failed transfers `anchors` select, each with its TRANSACTION_FAILED notifications.

    `anchors` select disjoint sets of transfers (new ids, the backlog), one UNION ALL branch
    each. A notification already matched (by a person, or by an earlier pass) is no candidate.
    Only one a pass has seen can be: the rules before this one match posted events only, and a
    person can only match what a pass has seen. So with `unseen_after` (the notifications'
    watermark) the check is skipped for newer ones, and a full pass does not read every match
    row it has just written to find none of them.
    """
    t, n, m = transfers, notifications, matches
    unmatched = ~active_row("notification", n.c.id)
    if unseen_after is not None:
        # Said on the match rows' side, so the planner reads only rows naming seen notifications
        # (none at all in a first pass) instead of hashing every row the pass has written.
        unmatched = ~exists().where(
            m.c.notification_id == n.c.id,
            m.c.notification_id <= unseen_after,
            m.c.unmatched_at.is_(None),
        )
    pairs = union_all(
        *(
            select(t.c.id.label("transfer_id"), n.c.id.label("notification_id"))
            .select_from(t.join(n, n.c.transfer_ref == t.c.transfer_ref))
            .where(
                anchor,
                t.c.match_status != EXCEPTION,
                t.c.is_terminal == true(),
                t.c.is_successful.is_not(True),
                t.c.status != STATUS_DENIED,
                n.c.event_type.in_(FAILED_EVENTS),
                n.c.match_status != EXCEPTION,
                unmatched,
            )
            for anchor in anchors
        )
    ).subquery("pairs")
    return select(
        pairs.c.transfer_id,
        pairs.c.notification_id,
        func.count().over(partition_by=pairs.c.transfer_id).label("rivals"),
    )


def match_failures(
    session: Session,
    anchors: Sequence[ColumnElement[bool]],
    now: datetime,
    unseen_after: int | None = None,
) -> MatchTally:
    """Failed transfers `anchors` select, with their one TRANSACTION_FAILED notification."""
    tally = MatchTally()
    query = failure_candidates(anchors, unseen_after)
    pairs: Sequence[Any] = []
    with candidate_table(session, "failure_candidates", query) as cand:
        rule = literal(RULE_TRANSFER_REF)
        doubtful = cand.c.rivals > 1
        counts = write_chosen(
            session, cand, cand.c.rivals == 1, rule=rule, now=now, tally=tally, doubtful=doubtful
        )
        if counts["doubtful"]:
            pairs = session.execute(
                select(cand.c.transfer_id, cand.c.notification_id).where(doubtful)
            ).all()
    tally.ambiguities = group_ambiguities(
        RULE_TRANSFER_REF, "transfer", "notification", ((int(a), int(b)) for a, b in pairs)
    )
    return tally
