"""Retention: how long each kind of record stays in the hot store, and pruning it safely.

One module per kind of record (deliveries, outbound_requests, snapshots, transfer_history,
alert_history), the shared batch discipline (batches), what may never go (protection), the
archive (archive) and the run over all of them (runner). Defaults: delivery bytes 90 days after
processing; closed Idempotency-Key records 7 days after completion; balance snapshots older
than 2 days thinned to changes plus one per holding a day; a terminal transfer's status history
compacted to its first and last change after 7 days. Postings, transfers, notifications,
matches and alert history are kept (resolved alerts go only when the operator sets an age).

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
  for good, so there is nothing to drop there; the cost that grew with their size is fixed by
  reading them by keyset and partial indexes instead (see the migration 0007).
- SQLite, the embedded default, has no partitions; one code path serves both databases.

Batches of a few hundred rows, each its own short transaction, keep locks short and make an
interrupted prune harmless. Deleted rows leave dead tuples until VACUUM reclaims them; nothing
periodic depends on when that happens, because every periodic query reads an index range
bounded by what is new or due, not the table.
"""
