"""The statements of one processing batch, per database: claim, look up, write, set aside.

`reconciliation.notifications.deciding` decides what each claimed delivery becomes; this
module says it to the database in as few statements as each allows, whatever the batch's size.
The drain after a broker outage (bench/drain.py: 100,000 deliveries within a minute on two
workers) is where this shows: written through the ORM, a batch of 100 cost about 40 statements'
worth of client work (an ORM object per notification, an IN list and a multi-row VALUES whose
text changed with every batch, so the driver parsed each afresh) and two new versions of every
delivery row with all their index entries.

PostgreSQL:

1. claim: `SELECT .. FOR UPDATE` of the batch's pending rows, by one array of ids. The row lock
   is the claim: a second worker handed the same delivery waits for the first to commit, then
   finds it no longer pending (PostgreSQL re-checks the condition on the row it waited for), so
   it is processed once. Unlike a claiming UPDATE it writes no row version of its own.
2. the notifications already stored under the claimed ids, by one array;
3. one statement that inserts the batch's notifications (one JSON document, read by
   `json_to_recordset`) and marks the processed deliveries (one UPDATE over two arrays), each
   row's attempts counted there; its commit does not wait for the WAL flush (see
   `_PG_STORE_PROCESSED`).

Every statement's text is fixed, so the driver converts it once per connection.

SQLite (in-process, no round trips, one writer at a time): the claim is an UPDATE .. RETURNING,
which takes the write lock up front rather than upgrading a read snapshot mid-transaction; the
writes are one executemany each.

A delivery set aside (quarantined) is rare and written on its own, with its bytes untouched.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec
from sqlalchemy import insert, or_, select, update
from sqlalchemy.orm import Session

from reconciliation.notifications.inbox import PENDING, PROCESSED, QUARANTINED, stored_delivery_id
from reconciliation.store.models import UNMATCHED, Delivery, Notification, Transfer
from reconciliation.store.types import utcnow
from reconciliation.store.write_statements import insert_ignoring_conflicts
from upstream import DeliveryNotification

#: How a transfer row first learned of a transfer named by a notification.
ORIGIN_NOTIFIED: Final = "notified"

#: The tables, for Core statements on the portable path.
NOTIFICATIONS: Final = Notification.metadata.tables[Notification.__tablename__]

#: A notification's columns as `notification_values` gives them, with their PostgreSQL types
#: (how `json_to_recordset` reads them from the batch's JSON).
NOTIFICATION_RECORD: Final = {
    "delivery_pk": "bigint",
    "event_id": "text",
    "body_id": "text",
    "payload_shape": "text",
    "event_type": "text",
    "transfer_ref": "uuid",
    "receipt_ref": "uuid",
    "account_ref": "uuid",
    "endpoint_ref": "uuid",
    "holding_ref": "uuid",
    "account_number": "text",
    "amount_minor": "numeric",
    "currency": "text",
    "claimed_status": "text",
    "narration": "text",
    "occurred_at": "timestamptz",
}

_PG_CLAIM: Final = (
    "SELECT id, delivery_id, body, headers, shape_problem FROM deliveries "
    f"WHERE id = ANY(%(ids)s::bigint[]) AND state = '{PENDING}' ORDER BY id FOR UPDATE"
)
_PG_NOTIFIED: Final = (
    "SELECT event_id, delivery_pk FROM notifications WHERE event_id = ANY(%(event_ids)s::text[]) "
    "AND delivery_pk IS NOT NULL"
)
#: `set_config(.., true)` is `SET LOCAL synchronous_commit = off`: the batch's commit does not
#: wait for its WAL flush. Safe, as for an activity page (reconciliation.postings.activity_copy):
#: if a crash loses the last batches, it loses their notifications and their deliveries' change
#: of state together, so those deliveries are pending again and the sweep re-sends them; and a
#: later transaction that commits synchronously (a reconciliation pass that matched one of
#: these notifications, say) flushes the WAL up to and including them first, so nothing built
#: on them outlives them. The receiver's commits (invariant 1) are not affected: they stay
#: synchronous. Cross-joined as a one-row subquery so PostgreSQL evaluates it once.
_PG_STORE_PROCESSED: Final = f"""
    WITH noted AS (
        INSERT INTO notifications ({", ".join(NOTIFICATION_RECORD)}, created_at, match_status)
        SELECT {", ".join(f"x.{c}" for c in NOTIFICATION_RECORD)}, %(now)s, '{UNMATCHED}'
        FROM json_to_recordset(%(notifications)s::json)
            AS x({", ".join(f"{c} {t}" for c, t in NOTIFICATION_RECORD.items())})
    )
    UPDATE deliveries AS d
    SET state = '{PROCESSED}', processed_at = %(now)s, error = NULL, shape_problem = NULL,
        attempts = d.attempts + 1, event_type = x.event_type
    FROM unnest(%(ids)s::bigint[], %(event_types)s::text[]) AS x(id, event_type),
        (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit(setting)
    WHERE d.id = x.id
"""
_PG_RECORD_TRANSFERS: Final = f"""
    INSERT INTO transfers (transfer_ref, origin, is_terminal, next_poll_at, poll_attempts,
        created_at, updated_at, match_status)
    SELECT ref, '{ORIGIN_NOTIFIED}', false, %(now)s, 0, %(now)s, %(now)s, '{UNMATCHED}'
    FROM unnest(%(refs)s::uuid[]) AS ref
    ON CONFLICT (transfer_ref) DO NOTHING
"""
_PG_BRING_TRANSFERS_FORWARD: Final = """
    UPDATE transfers SET next_poll_at = %(now)s, updated_at = %(touched)s
    WHERE transfer_ref = ANY(%(refs)s::uuid[]) AND NOT is_terminal
        AND (next_poll_at IS NULL OR next_poll_at > %(now)s)
"""


class ClaimedDelivery(NamedTuple):
    """A pending delivery this batch holds, with what processing reads of it."""

    id: int
    delivery_id: str
    body: bytes
    headers: Mapping[str, str] | None
    shape_problem: str | None


class BatchWrites:
    """The batch's statements on one session's connection, chosen by its database."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.postgres = session.get_bind().dialect.name == "postgresql"

    def claim(self, delivery_pks: Sequence[int]) -> list[ClaimedDelivery]:
        """The batch's deliveries still pending, held until the commit, in id order."""
        ids = sorted(set(delivery_pks))
        if self.postgres:
            return [ClaimedDelivery(*row) for row in self._driver_rows(_PG_CLAIM, {"ids": ids})]
        rows = self.session.execute(
            update(Delivery)
            .where(Delivery.id.in_(ids), Delivery.state == PENDING)
            .values(attempts=Delivery.attempts + 1)
            .returning(
                Delivery.id,
                Delivery.delivery_id,
                Delivery.body,
                Delivery.headers,
                Delivery.shape_problem,
            )
        ).all()
        return sorted((ClaimedDelivery(*row) for row in rows), key=lambda r: r.id)

    def notified_by(self, delivery_ids: Sequence[str]) -> dict[str, set[int]]:
        """Event id -> the deliveries that already produced a notification under it."""
        found: dict[str, set[int]] = {}
        if not delivery_ids:
            return found
        if self.postgres:
            rows: Any = self._driver_rows(_PG_NOTIFIED, {"event_ids": sorted(set(delivery_ids))})
        else:
            rows = self.session.execute(
                select(Notification.event_id, Notification.delivery_pk).where(
                    Notification.event_id.in_(set(delivery_ids)),
                    Notification.delivery_pk.is_not(None),
                )
            )
        for event_id, delivery_pk in rows:
            found.setdefault(event_id, set()).add(delivery_pk)
        return found

    def store_processed(
        self,
        notifications: Sequence[dict[str, Any]],
        processed: Sequence[tuple[int, str]],
        now: datetime,
    ) -> None:
        """Insert the new notifications (`notification_values` rows) and mark the processed
        deliveries (row id, event type) done."""
        if not processed and not notifications:
            return
        if self.postgres:
            self._driver_rows(
                _PG_STORE_PROCESSED,
                {
                    "notifications": msgspec.json.encode(notifications).decode(),
                    "ids": [pk for pk, _ in processed],
                    "event_types": [event_type for _, event_type in processed],
                    "now": now,
                },
                fetch=False,
            )
            return
        connection = self.session.connection()
        if notifications:
            connection.execute(
                insert(NOTIFICATIONS),
                [{**n, "created_at": now, "match_status": UNMATCHED} for n in notifications],
            )
        if processed:
            self.session.execute(
                update(Delivery),
                [
                    {
                        "id": pk,
                        "state": PROCESSED,
                        "processed_at": now,
                        "error": None,
                        "event_type": event_type,
                        "shape_problem": None,
                    }
                    for pk, event_type in processed
                ],
            )

    def quarantine(self, pk: int, error: str, shape_problem: str | None = None) -> None:
        """Set one claimed delivery aside with its reason and what settles it (`error`, as
        `deciding.KEPT` writes it); its bytes stay as received."""
        values: dict[str, Any] = {
            "state": QUARANTINED,
            "shape_problem": shape_problem,
            "error": error,
        }
        if self.postgres:  # the claim counted nothing there (see `claim`)
            values["attempts"] = Delivery.attempts + 1
        self.session.execute(update(Delivery).where(Delivery.id == pk).values(**values))

    def record_transfers(self, refs: Sequence[uuid.UUID], now: datetime) -> None:
        """Make sure each named transfer is polled soon: new ones are due now, waiting ones
        sooner (see processing.record_named_transfers)."""
        unique = sorted(set(refs))
        if not unique:
            return
        if self.postgres:
            params = {"refs": unique, "now": now, "touched": utcnow()}
            self._driver_rows(_PG_RECORD_TRANSFERS, params, fetch=False)
            self._driver_rows(_PG_BRING_TRANSFERS_FORWARD, params, fetch=False)
            return
        self.session.execute(
            insert_ignoring_conflicts(self.session, Transfer, ["transfer_ref"]),
            [
                {
                    "transfer_ref": ref,
                    "origin": ORIGIN_NOTIFIED,
                    "is_terminal": False,
                    "next_poll_at": now,
                    "poll_attempts": 0,
                    "created_at": now,
                    "updated_at": now,
                }
                for ref in unique
            ],
        )
        self.session.execute(
            update(Transfer)
            .where(
                Transfer.transfer_ref.in_(unique),
                Transfer.is_terminal.is_(False),
                or_(Transfer.next_poll_at.is_(None), Transfer.next_poll_at > now),
            )
            .values(next_poll_at=now)
        )

    def _driver_rows(
        self,
        sql: str,
        params: Mapping[str, Any],
        *,
        fetch: bool = True,
    ) -> list[tuple[Any, ...]]:
        """Run fixed SQL on the session's own connection (inside its transaction).

        Never as a prepared statement: PostgreSQL plans a prepared statement once for any
        parameters, and a plan made while the tables were small (a new store, the first
        batches of a drain) went on scanning all of `notifications` for every batch after it
        (15 ms a batch at 10,000 rows, and growing). Planning these each time costs a fraction
        of a millisecond a batch.
        """
        driver = self.session.connection().connection.driver_connection
        assert driver is not None
        with driver.cursor() as cursor:
            cursor.execute(sql, params, prepare=False)
            return cursor.fetchall() if fetch else []


def notification_values(delivery_pk: int, event_id: str, d: DeliveryNotification) -> dict[str, Any]:
    """One notification's column values (see NOTIFICATION_RECORD), from a read delivery."""
    return {
        "delivery_pk": delivery_pk,
        "event_id": event_id,
        "body_id": stored_delivery_id(d.body_id) if d.body_id is not None else None,
        "payload_shape": d.shape,
        "event_type": d.event_type,
        "transfer_ref": d.transfer_ref,
        "receipt_ref": d.receipt_ref,
        "account_ref": d.account_ref,
        "endpoint_ref": d.endpoint_ref,
        "holding_ref": d.holding_ref,
        "account_number": d.account_number,
        "amount_minor": d.amount_minor,
        "currency": d.currency,
        "claimed_status": d.claimed_status,
        "narration": d.narration,
        "occurred_at": d.occurred_at,
    }
