"""Reconciled facts leave only when the operator sets limits for them: a settled group at a time.

Postings, transfers, notifications and their match rows are what recon reconciled; they are
kept for good unless RECON_RETAIN_POSTINGS_DAYS, _TRANSFERS_DAYS, _NOTIFICATIONS_DAYS and
_MATCHES_DAYS say otherwise. A match group (groups.py: its match rows and every item they
name) goes as one unit, so no match row ever names a missing item, and only when:

- every row of it was written (matched, or taken apart) before the matches cutoff, and every
  row has been looked at by a pass's drift rules (its id is at or below the pass's
  `reconcile.matches_checked` watermark);
- every item of it may go by its own kind's conditions (members.py): past its age, nothing
  waits on it, no open alert names it, and the balance-drift check no longer reads it;
- every kind it holds has a limit: a kind left unset keeps every group it belongs to.

A transfer leaves with its status history and its answered intents; each holding whose
postings leave gets its pruned horizon (ledger_audit.ledger.PRUNED_THROUGH: the audit counts a
posting the gateway shows at or before it as pruned, not missing) and the running sum of what
left (`PRUNED_NET`, so whoever sums a holding's postings from nothing can start from it).

Match rows are read by id from the first each run; a group that must stay is simply read again
next run (it may be free to go by then), so a run costs what it removes plus what old groups
are kept, which is what an alert names or a person must decide: few.

Each batch holds the pass lease (reconciliation.pass_lease, when the caller asks): a pass
joins new items against old ones, and must never match a new posting to a notification this
batch is removing.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.drift.balance_sums import PRUNED_NET
from reconciliation.ledger_audit.ledger import pruned_through_name, to_micros
from reconciliation.retention.batches import PruneContext, commit_batch, take_in
from reconciliation.retention.groups import ROW_COLUMNS, MatchGroup, close_groups
from reconciliation.retention.members import (
    REFS_AT_ONCE,
    FactCutoffs,
    PostingFacts,
    notifications_that_may_go,
    postings_that_may_go,
    transfers_that_may_go,
)
from reconciliation.retention.protection import open_alert_refs
from reconciliation.store import watermarks
from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import matches, notifications, postings, transfers
from reconciliation.store.tables import transfer_changes as changes
from reconciliation.store.tables import transfer_intents as intents
from reconciliation.transfers.intents import PENDING

#: Record kind, as reported; each table is archived under its own name.
KIND: Final = "matches"


#: Stands for an item no longer in the store (nothing to remove, nothing to keep).
_ABSENT: Final = object()


class Verdicts:
    """The batch's items that may go, by kind, and what removing a group takes with it."""

    def __init__(
        self,
        postings: dict[int, PostingFacts | None],
        transfers: dict[int, Any],
        notifications: dict[int, bool],
    ) -> None:
        self.postings = postings
        self.transfers = transfers
        self.notifications = notifications

    def group_may_go(self, group: MatchGroup) -> bool:
        return (
            all(self.postings.get(i, _ABSENT) is not None for i in group.items["posting"])
            and all(self.transfers.get(i, _ABSENT) is not None for i in group.items["transfer"])
            and all(self.notifications.get(i, True) for i in group.items["notification"])
        )


def prune_match_groups(ctx: PruneContext, cutoffs: FactCutoffs, grace_seconds: int) -> bool:
    """Remove settled groups past every limit, batch by batch; False when a pass kept the lease."""
    if cutoffs.match is None:
        return True
    match_cutoff: datetime = cutoffs.match
    after = 0
    ahead: set[int] = set()  # rows judged this run above `after`: a group reaches forward
    done = False

    def work(session: Session) -> dict[str, list[dict[str, Any]]]:
        nonlocal after, ahead, done
        checked = watermarks.read(session, watermarks.MATCHES_CHECKED, 0)
        anchors = session.execute(
            select(*ROW_COLUMNS)
            .where(matches.c.id > after)
            .order_by(matches.c.id)
            .limit(ctx.batch_rows)
        ).all()
        done = len(anchors) < ctx.batch_rows
        start = []
        for row in anchors:
            if row.matched_at >= match_cutoff or row.id > checked:
                done = True
                break
            after = row.id
            if row.id not in ahead:
                start.append(row)
        ahead = {i for i in ahead if i > after}
        if not start:
            return {}
        groups = close_groups(session, start)
        for group in groups:
            ahead |= {i for i in group.rows if i > after}
        ready = [g for g in groups if g.last_change < match_cutoff and max(g.rows) <= checked]
        going = _groups_that_may_go(session, ctx, ready, cutoffs, grace_seconds)
        return remove_facts(session, ctx, going)

    while not done:
        with ctx.hold_pass() as held:
            if not held:
                return False
            commit_batch(ctx, KIND, work)
    return True


def _groups_that_may_go(
    session: Session,
    ctx: PruneContext,
    groups: list[MatchGroup],
    cutoffs: FactCutoffs,
    grace_seconds: int,
) -> list[tuple[MatchGroup, Verdicts]]:
    """The groups whose every item may go: with no limit for a kind, no group holding it."""
    guard = open_alert_refs(session)  # read again under the lease: what a pass just raised

    def holding(kind: str) -> set[int]:
        return {i for g in groups for i in g.items[kind]}

    if cutoffs.posting is None:
        groups = [g for g in groups if not g.items["posting"]]
    if cutoffs.transfer is None:
        groups = [g for g in groups if not g.items["transfer"]]
    if cutoffs.notification is None:
        groups = [g for g in groups if not g.items["notification"]]
    verdicts = Verdicts(
        postings_that_may_go(
            session, holding("posting"), cutoffs, grace_seconds, guard, ctx.balance_basis
        ),
        transfers_that_may_go(session, holding("transfer"), cutoffs, guard, ctx.dry_run),
        notifications_that_may_go(session, holding("notification"), cutoffs, guard, ctx.dry_run),
    )
    return [(g, verdicts) for g in groups if verdicts.group_may_go(g)]


def remove_facts(
    session: Session, ctx: PruneContext, going: list[tuple[MatchGroup, Verdicts]]
) -> dict[str, list[dict[str, Any]]]:
    """Remove these groups whole (rows first, each transfer with its history and intents)."""
    if not going:
        return {}
    rows: set[int] = set()
    posting_facts: dict[int, PostingFacts] = {}
    transfer_refs: dict[int, Any] = {}
    note_ids: set[int] = set()
    for group, verdicts in going:
        rows |= set(group.rows)
        for i in group.items["posting"]:
            facts = verdicts.postings.get(i)
            if facts is not None:
                posting_facts[i] = facts
        for i in group.items["transfer"]:
            if verdicts.transfers.get(i) is not None:
                transfer_refs[i] = verdicts.transfers[i]
        note_ids |= {i for i in group.items["notification"] if i in verdicts.notifications}
    return remove_items(session, ctx, rows, posting_facts, transfer_refs, note_ids)


def remove_items(
    session: Session,
    ctx: PruneContext,
    rows: set[int],
    posting_facts: dict[int, PostingFacts],
    transfer_refs: dict[int, Any],
    note_ids: set[int],
) -> dict[str, list[dict[str, Any]]]:
    """Remove match rows and items (archived by table), and move the pruned horizons."""
    dry = ctx.dry_run
    removed: dict[str, list[dict[str, Any]]] = {}
    if rows:
        removed["matches"] = take_in(session, matches, matches.c.id, rows, dry)
    if transfer_refs:
        removed["transfer_changes"] = take_in(
            session, changes, changes.c.transfer_id, transfer_refs, dry
        )
        answered = [
            i
            for refs in chunks(list(transfer_refs.values()), REFS_AT_ONCE)
            for i in session.scalars(
                select(intents.c.id).where(
                    intents.c.transfer_ref.in_(refs), intents.c.outcome != PENDING
                )
            )
        ]
        removed["transfer_intents"] = take_in(session, intents, intents.c.id, answered, dry)
        removed["transfers"] = take_in(session, transfers, transfers.c.id, transfer_refs, dry)
    if note_ids:
        removed["notifications"] = take_in(
            session, notifications, notifications.c.id, note_ids, dry
        )
    if posting_facts:
        removed["postings"] = take_in(session, postings, postings.c.id, posting_facts, dry)
        if not dry:
            record_pruned_postings(session, posting_facts.values(), ctx.now)
    return {table: taken for table, taken in removed.items() if taken}


def record_pruned_postings(session: Session, facts: Any, now: datetime) -> None:
    """Per holding: move its pruned horizon to the newest posting removed, add what left."""
    newest: dict[int, int] = {}
    net: dict[int, int] = defaultdict(int)
    for f in facts:
        newest[f.holding_id] = max(newest.get(f.holding_id, -1), to_micros(f.posted_at))
        net[f.holding_id] += f.signed_minor
    for holding_id, micros in newest.items():
        name = pruned_through_name(holding_id)
        watermarks.write(session, name, max(micros, watermarks.read(session, name, -1)), now)
        total = f"{PRUNED_NET}{holding_id}"
        watermarks.write(session, total, watermarks.read(session, total, 0) + net[holding_id], now)
