"""A PostgreSQL store with a long, reconciled history, generated inside the database.

Used by test_query_plans.py beside it (a few hundred thousand rows) and bench/history.py
(millions): the periodic queries must cost the same on either, so both need a
history whose statistics look like months of running. Every row is made by INSERT ... SELECT
over generate_series, so nothing crosses the wire and 5 million rows take minutes, not hours.

Shape, for `transfers` settled transfers spread evenly over `days` days before `now`:

- each transfer (terminal, matched) has two ledger legs (postings), three status changes, one
  TRANSACTION_COMPLETED notification from one processed delivery, two match rows and one
  closed outbound request;
- a second, non-money delivery and notification per transfer (TRANSFER_CREATED), so postings
  and deliveries are about equal in number;
- one balance snapshot per holding per `snapshot_minutes`, the balance unchanged for hours;
- resolved alerts, and every stream's watermark at its top (a pass finds nothing new).

`add_recent` then writes what a few minutes of traffic would: new transfers (some still polled),
their postings, deliveries and notifications, so a pass and a poll round have work to do.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import Engine, text

#: Holdings of the generated world (the activity and balance pollers iterate over these).
HOLDINGS: Final = 200

#: A delivery body of the size the soak measured once headers are counted in (~2.4 KB a row).
BODY_BYTES: Final = 1800


def _exec(engine: Engine, statements: list[str], params: dict[str, object]) -> None:
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement), params)


def fill_history(
    engine: Engine,
    *,
    transfers: int,
    now: datetime,
    days: int = 120,
    snapshot_minutes: int = 60,
    body_bytes: int = BODY_BYTES,
) -> None:
    """Write the history described above into an empty, migrated store, then ANALYZE it.

    With `transfers` 0 only the holdings and their cursors are written: an empty store that
    new traffic can land in.
    """
    start = now - timedelta(days=days)
    step = timedelta(days=days) / max(transfers, 1)
    params: dict[str, object] = {
        "n": transfers,
        "h": HOLDINGS,
        "start": start,
        "step": step,
        "now": now,
        "body": body_bytes,
        "snap": timedelta(minutes=snapshot_minutes),
        "snaps": int(days * 24 * 60 / snapshot_minutes) if transfers else 0,
    }
    _exec(engine, _HISTORY, params)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))


def add_recent(engine: Engine, *, transfers: int, now: datetime, polled: int = 50) -> None:
    """New traffic since the last pass: `transfers` transfers with their legs and webhooks.

    The newest `polled` of them are not terminal yet (due for a poll), like a live system.
    """
    params: dict[str, object] = {"n": transfers, "now": now, "polled": polled, "h": HOLDINGS}
    _exec(engine, _RECENT, params)


_HISTORY: Final = [
    """INSERT INTO holdings (id, account_ref, endpoint_ref, holding_ref, unit_kind, currency,
           watched, discovered_at, updated_at)
       SELECT h, md5('account' || h)::uuid, md5('endpoint' || h)::uuid, md5('holding' || h)::uuid,
              'fiat', 'NGN', true, :start, :start
       FROM generate_series(1, :h) AS h""",
    """INSERT INTO activity_cursors (holding_id, next_poll_at, last_polled_at,
           consecutive_errors, postings_read, reads_completed)
       SELECT h, :now, :now, 0, 0, 1 FROM generate_series(1, :h) AS h""",
    """INSERT INTO transfers (id, transfer_ref, source_holding_ref, dest_holding_ref, currency,
           amount_minor, stage, status, is_terminal, is_successful, requested_at, decided_at,
           origin, poll_attempts, last_polled_at, terminal_at, created_at, updated_at,
           match_status)
       SELECT k, md5('transfer' || k)::uuid, md5('holding' || (k % :h + 1))::uuid,
              md5('holding' || ((k * 7) % :h + 1))::uuid, 'NGN', 1000 + k % 100000,
              'Settled', 'completed', true, true, :start + k * :step, :start + k * :step,
              'created', 2, :start + k * :step, :start + k * :step, :start + k * :step,
              :start + k * :step, 'unmatched'
       FROM generate_series(1, :n) AS k""",
    """INSERT INTO transfer_changes (transfer_id, observed_at, stage, status, revision)
       SELECT k, :start + k * :step, s.stage, s.status, s.rev
       FROM generate_series(1, :n) AS k,
            (VALUES ('Reserved', NULL, 1), ('Submitted', 'processing', 2),
                    ('Settled', 'completed', 3)) AS s(stage, status, rev)""",
    """INSERT INTO postings (id, journal_ref, line_ref, receipt_ref, holding_id, posted_at, side,
           effect, kind, amount_minor, currency, ingested_at, match_status)
       SELECT 2 * k - 1 + leg, md5('journal' || k)::uuid, md5('line' || k || ':' || leg)::uuid,
              md5('receipt' || k)::uuid,
              CASE leg WHEN 0 THEN k % :h + 1 ELSE (k * 7) % :h + 1 END,
              :start + k * :step, CASE leg WHEN 0 THEN 'debit' ELSE 'credit' END,
              CASE leg WHEN 0 THEN 'decrease' ELSE 'increase' END, 'transfer_settlement',
              1000 + k % 100000, 'NGN', :start + k * :step, 'unmatched'
       FROM generate_series(1, :n) AS k, generate_series(0, 1) AS leg""",
    """INSERT INTO deliveries (id, delivery_id, body_sha256, body, headers, scheme, event_type,
           received_at, state, attempts, processed_at, original)
       SELECT 2 * k - 1 + e, 'msg_' || k || '_' || e, md5('body' || k || e) || md5('x' || k || e),
              convert_to(rpad('{"event":"' || k || '"', :body, ' ') || '}', 'UTF8'),
              '{"webhook-id": "msg"}'::json, 'standard',
              CASE e WHEN 0 THEN 'TRANSACTION_COMPLETED' ELSE 'TRANSFER_CREATED' END,
              :start + k * :step, 'processed', 1, :start + k * :step, true
       FROM generate_series(1, :n) AS k, generate_series(0, 1) AS e""",
    """INSERT INTO notifications (id, delivery_pk, event_id, event_type, transfer_ref,
           receipt_ref, holding_ref, amount_minor, currency, claimed_status, occurred_at,
           created_at, match_status)
       SELECT 2 * k - 1 + e, 2 * k - 1 + e, 'msg_' || k || '_' || e,
              CASE e WHEN 0 THEN 'TRANSACTION_COMPLETED' ELSE 'TRANSFER_CREATED' END,
              md5('transfer' || k)::uuid, md5('receipt' || k)::uuid,
              md5('holding' || (k % :h + 1))::uuid, 1000 + k % 100000, 'NGN', 'SUCCESSFUL',
              :start + k * :step, :start + k * :step, 'unmatched'
       FROM generate_series(1, :n) AS k, generate_series(0, 1) AS e""",
    """INSERT INTO matches (rule, posting_id, transfer_id, notification_id, matched_at,
           matched_by)
       SELECT 'transfer_ref', 2 * k - 1 + leg, k, 2 * k - 1, :start + k * :step, 'recon'
       FROM generate_series(1, :n) AS k, generate_series(0, 1) AS leg""",
    """INSERT INTO outbound_requests (idempotency_key, operation, material_fingerprint,
           request_body, state, created_at, sent_at, completed_at, response_status, result_ref)
       SELECT md5('key' || k)::uuid, 'create_transfer', md5('material' || k),
              '{"amount": 1}'::json, 'done', :start + k * :step, :start + k * :step,
              :start + k * :step, 200, md5('transfer' || k)
       FROM generate_series(1, :n) AS k""",
    """INSERT INTO balance_snapshots (holding_id, settled_minor, available_minor,
           reserved_minor, projection_state, observed_at)
       SELECT h, 1000000 + (i / 24) * 10, 1000000 + (i / 24) * 10, 0, 'Projected',
              :start + i * :snap
       FROM generate_series(1, :snaps) AS i, generate_series(1, :h) AS h""",
    """INSERT INTO balance_checks (snapshot_id, holding_id, observed_at, settled_minor,
           posted_minor, drift_minor, explained_by_lag, postings_through_id, checked_at)
       SELECT id, holding_id, observed_at, settled_minor, settled_minor, 0, false,
              2 * floor(extract(epoch FROM observed_at - :start) / extract(epoch FROM :step)),
              observed_at
       FROM balance_snapshots""",
    """INSERT INTO alerts (kind, severity, subject, fingerprint, evidence, state, opened_at,
           last_seen_at, occurrences, resolved_at, resolved_by)
       SELECT 'posting_without_notification', 'medium', 'history', 'history:' || a,
              json_build_object('postingId', a), 'resolved', :start + a * :step,
              :start + a * :step, 1, :start + a * :step, 'recon'
       FROM generate_series(1, :n, 5) AS a""",
    *[
        f"SELECT setval(pg_get_serial_sequence('{t}', 'id'), "
        f"(SELECT coalesce(max(id), 0) + 1 FROM {t}), false)"
        for t in (
            "holdings",
            "transfers",
            "transfer_changes",
            "postings",
            "deliveries",
            "notifications",
            "matches",
            "outbound_requests",
            "balance_snapshots",
            "balance_checks",
            "alerts",
        )
    ],
    """INSERT INTO watermarks (name, value, updated_at)
       SELECT name, value, :now FROM (VALUES
           ('match.seen.posting', (SELECT coalesce(max(id), 0) FROM postings)),
           ('match.seen.transfer', (SELECT coalesce(max(id), 0) FROM transfers)),
           ('match.seen.notification', (SELECT coalesce(max(id), 0) FROM notifications)),
           ('reconcile.matches_checked', (SELECT coalesce(max(id), 0) FROM matches)),
           ('reconcile.deliveries_checked', (SELECT coalesce(max(id), 0) FROM deliveries))
       ) AS w(name, value)""",
]

_RECENT: Final = [
    """CREATE TEMPORARY TABLE recent ON COMMIT DROP AS
       SELECT (SELECT coalesce(max(id), 0) FROM transfers) + r AS k, r
       FROM generate_series(1, :n) AS r""",
    """INSERT INTO transfers (id, transfer_ref, source_holding_ref, dest_holding_ref, currency,
           amount_minor, stage, status, is_terminal, is_successful, requested_at, decided_at,
           origin, poll_attempts, next_poll_at, terminal_at, created_at, updated_at,
           match_status)
       SELECT k, md5('transfer' || k)::uuid, md5('holding' || (k % :h + 1))::uuid,
              md5('holding' || ((k * 7) % :h + 1))::uuid, 'NGN', 1000 + k % 100000,
              'Settled', 'completed', r <= :n - :polled, r <= :n - :polled, :now, :now,
              'created', 0, CASE WHEN r > :n - :polled THEN :now END,
              CASE WHEN r <= :n - :polled THEN :now END, :now, :now, 'unmatched'
       FROM recent""",
    """INSERT INTO postings (journal_ref, line_ref, receipt_ref, holding_id, posted_at, side,
           effect, kind, amount_minor, currency, ingested_at, match_status)
       SELECT md5('journal' || k)::uuid, md5('line' || k || ':' || leg)::uuid,
              md5('receipt' || k)::uuid,
              CASE leg WHEN 0 THEN k % :h + 1 ELSE (k * 7) % :h + 1 END, :now,
              CASE leg WHEN 0 THEN 'debit' ELSE 'credit' END,
              CASE leg WHEN 0 THEN 'decrease' ELSE 'increase' END, 'transfer_settlement',
              1000 + k % 100000, 'NGN', :now, 'unmatched'
       FROM recent, generate_series(0, 1) AS leg""",
    """INSERT INTO deliveries (delivery_id, body_sha256, body, headers, scheme, event_type,
           received_at, state, attempts, processed_at, original)
       SELECT 'msg_' || k || '_0', md5('body' || k) || md5('y' || k),
              convert_to('{"event":"' || k || '"}', 'UTF8'), '{"webhook-id": "msg"}'::json,
              'standard', 'TRANSACTION_COMPLETED', :now, 'processed', 1, :now, true
       FROM recent""",
    """INSERT INTO notifications (delivery_pk, event_id, event_type, transfer_ref, receipt_ref,
           holding_ref, amount_minor, currency, claimed_status, occurred_at, created_at,
           match_status)
       SELECT d.id, d.delivery_id, 'TRANSACTION_COMPLETED', md5('transfer' || r.k)::uuid,
              md5('receipt' || r.k)::uuid, md5('holding' || (r.k % :h + 1))::uuid,
              1000 + r.k % 100000, 'NGN', 'SUCCESSFUL', :now, :now, 'unmatched'
       FROM recent r JOIN deliveries d ON d.delivery_id = 'msg_' || r.k || '_0'""",
]
