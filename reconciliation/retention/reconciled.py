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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.drift.balance_sums import PRUNED_NET
from reconciliation.ledger_audit.ledger import pruned_through_name, to_micros
from reconciliation.retention.batches import PruneContext, Removed, by_id, take_in
from reconciliation.retention.groups import ITEM_COLUMNS, ROW_COLUMNS, MatchGroup, close_groups
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


@dataclass(frozen=True, slots=True)
class Verdicts:
    """The batch's items by kind: a posting's facts, a transfer's ref, or True for a
    notification when it may go; None (False) when it must stay."""

    postings: dict[int, PostingFacts | None]
    transfers: dict[int, Any]
    notifications: dict[int, bool]

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
    ahead: set[int] = set()  # rows judged this run above the last batch's: a group reaches forward
    checked = 0

    def beyond(session: Session) -> Callable[[Any], bool]:
        nonlocal checked
        checked = watermarks.read(session, watermarks.MATCHES_CHECKED, 0)
        return lambda row: row.matched_at >= match_cutoff or row.id > checked

    def judge(session: Session, rows: list[Any], after: int) -> Removed:
        nonlocal ahead
        start = [row for row in rows if row.id not in ahead]
        ahead = {i for i in ahead if i > after}
        if not start:
            return {}
        groups = close_groups(session, start)
        for group in groups:
            ahead |= {i for i in group.rows if i > after}
        ready = [g for g in groups if g.last_change < match_cutoff and max(g.rows) <= checked]
        return remove_facts(
            session, ctx, *_groups_that_may_go(session, ctx, ready, cutoffs, grace_seconds)
        )

    return by_id(ctx, KIND, select(*ROW_COLUMNS), matches.c.id, beyond, judge, leased=True)


def _groups_that_may_go(
    session: Session,
    ctx: PruneContext,
    groups: list[MatchGroup],
    cutoffs: FactCutoffs,
    grace_seconds: int,
) -> tuple[list[MatchGroup], Verdicts]:
    """The groups whose every item may go: with no limit for a kind, no group holding it."""
    guard = open_alert_refs(session)  # read again under the lease: what a pass just raised
    unlimited = [kind for kind in ITEM_COLUMNS if getattr(cutoffs, kind) is None]
    groups = [g for g in groups if not any(g.items[kind] for kind in unlimited)]

    def holding(kind: str) -> set[int]:
        return {i for g in groups for i in g.items[kind]}

    verdicts = Verdicts(
        postings_that_may_go(
            session, holding("posting"), cutoffs, grace_seconds, guard, ctx.balance_basis
        ),
        transfers_that_may_go(session, holding("transfer"), cutoffs, guard, ctx.dry_run),
        notifications_that_may_go(session, holding("notification"), cutoffs, guard, ctx.dry_run),
    )
    return [g for g in groups if verdicts.group_may_go(g)], verdicts


def remove_facts(
    session: Session, ctx: PruneContext, going: list[MatchGroup], verdicts: Verdicts
) -> Removed:
    """Remove these groups whole (rows first, each transfer with its history and intents)."""
    if not going:
        return {}

    def items(kind: str) -> set[int]:
        return {i for group in going for i in group.items[kind]}

    postings_gone = {
        i: facts for i in items("posting") if (facts := verdicts.postings.get(i)) is not None
    }
    transfer_refs = {
        i: ref for i in items("transfer") if (ref := verdicts.transfers.get(i)) is not None
    }
    note_ids = {i for i in items("notification") if i in verdicts.notifications}
    rows = {i for group in going for i in group.rows}
    return remove_items(session, ctx, rows, postings_gone, transfer_refs, note_ids)


def remove_items(
    session: Session,
    ctx: PruneContext,
    rows: set[int],
    posting_facts: dict[int, PostingFacts],
    transfer_refs: dict[int, Any],
    note_ids: set[int],
) -> Removed:
    """Remove match rows and items (archived by table), and move the pruned horizons."""
    dry = ctx.dry_run
    removed: Removed = {}
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
