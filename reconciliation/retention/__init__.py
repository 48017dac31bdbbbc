"""Retention: how long each kind of record stays in the hot store, and pruning it safely.

One module per kind of record (deliveries, outbound_requests, snapshots, transfer_history,
alert_history; the reconciled facts: reconciled for settled match groups, found by groups and
judged by members, and matchless for what no match row names), the shared batch discipline
(batches), what may never go (protection), the archive (archive), the VACUUM after a run
(vacuum) and the run over all of them (runner). Defaults: delivery bytes 90 days after
processing; closed Idempotency-Key records 7 days after completion; balance snapshots older
than 2 days thinned to changes plus one per holding a day; a terminal transfer's status history
compacted to its first and last change after 7 days. Postings, transfers, notifications,
matches and alert history are kept unless the operator sets limits for them
(RECON_RETAIN_POSTINGS_DAYS and its siblings; resolved alerts: RECON_RETAIN_RESOLVED_ALERTS_DAYS).

Why batched DELETEs and not monthly partitions on PostgreSQL
-----------------------------------------------------------
Dropping a month's partition would be cheaper than deleting its rows, but it does not fit what
these tables promise:

- PostgreSQL requires every unique index of a partitioned table to include the partition key.
  The inbox's deduplication is unique on (delivery_id, body_sha256) and on delivery_id alone
  for the original body; postings are unique on (journal_ref, line_ref). With the month added,
  a retry or a re-read that lands in the next month (a provider retrying over a month end, a
  page re-read after a cursor reset) is no longer a conflict but a second row: invariant 2
  (durable deduplication) and idempotent ingestion would silently break. ON CONFLICT needs the
  very unique index that could no longer exist.
- What may go is not "everything older than a month": a delivery whose notification is
  unmatched, or that an open alert names, must stay however old. A partition cannot be dropped
  while one such row is in it, so rows would have to be moved out first: a delete by another
  name.
- Postings and notifications, the biggest tables after deliveries, are reconciled facts kept
  for good by default, and under an operator's limits they leave a settled match group at a
  time, which a month's partition cannot follow either; the cost that grew with their size is
  fixed by reading them by keyset and partial indexes instead.
- SQLite, the embedded default, has no partitions; one code path serves both databases.

Batches of a few hundred rows, each its own short transaction, keep locks short and make an
interrupted prune harmless. Deleted rows leave dead tuples until VACUUM reclaims them; nothing
periodic depends on when that happens, because every periodic query reads an index range
bounded by what is new or due, not the table, and the run vacuums every table it took rows
from (vacuum.py), so the space is reused however the autovacuum daemon is set.
"""

from reconciliation.retention.archive import ArchiveError
from reconciliation.retention.runner import run_retention

__all__ = [
    "ArchiveError",
    "run_retention",
]
