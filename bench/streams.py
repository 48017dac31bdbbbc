"""The three streams of the reconcile, rebuild and console benches, generated row by row and
written straight into a store (COPY on PostgreSQL, executemany on SQLite).

Refs derive from the row number (a tag in the high bits), so the streams agree without keeping
anything in memory. For `size` records per stream over 1,000 holdings: two in five settled
transfers (two legs, one TRANSACTION_COMPLETED), two in five failed (TRANSACTION_FAILED), the
rest denied (no webhook); inbound credits (PAYMENT_RECEIVED, one in four without a receiptRef,
so the account-number rule matches it) to make `size` postings; a balance snapshot per holding.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any, Final

from harness import plain

HOLDINGS: Final = 1_000
BASE: Final = datetime(2026, 10, 1, tzinfo=UTC)
#: High 32 bits of the generated uuids, by kind of reference, in this order from 1.
KINDS: Final = "account endpoint holding locator transfer receipt journal line credit_receipt event"
TAGS: Final = {kind: n for n, kind in enumerate(KINDS.split(), start=1)}

Row = dict[str, Any]


def ref(kind: str, n: int) -> uuid.UUID:
    return uuid.UUID(int=(TAGS[kind] << 96) | n)


def owner(h: int) -> Row:
    """A holding's account, endpoint and holding refs."""
    return {f"{k}_ref": ref(k, h) for k in ("account", "endpoint", "holding")}


def account_number(h: int) -> str | None:
    """Even holdings have a bank account number (the destinations); odd ones are internal."""
    return str(1_000_000_000 + h) if h % 2 == 0 else None


@dataclass
class Streams:
    """Row iterators for each stream, and the balance each holding should show once read."""

    transfers: Callable[[], Iterator[Row]]
    postings: Callable[[], Iterator[Row]]
    notifications: Callable[[], Iterator[Row]]
    balances: list[int]
    base: datetime
    last: datetime


def generate(
    size: int,
    offset: int = 0,
    settled_only: int | None = None,
    base: datetime = BASE,
    holdings: int = HOLDINGS,
) -> Streams:
    """`size` records per stream; or, with `settled_only`, that many settled transfers from
    `offset` on (a transfer, two legs, one notification each: what arrives after a pass)."""
    balances = [0] * holdings
    settled_all = size * 2 // 5
    failed_end = 2 * settled_all
    credits = size - 2 * settled_all
    settled = range(offset, offset + (settled_only if settled_only is not None else settled_all))
    extra = settled_only is None

    def when(k: int) -> datetime:
        return base + timedelta(seconds=2 * k)

    def amount_of(k: int) -> int:
        return 1_000 + (k * 7_919) % 10_000_000

    def source(k: int) -> int:
        return 2 * (k % (holdings // 2)) + 1

    def dest(k: int) -> int:
        return 2 * ((k * 7) % (holdings // 2))

    def transfer(k: int, status: str) -> Row:
        at, stage = when(k), {"completed": "Settled", "failed": "Failed"}.get(status)
        return {
            "id": k + 1, "transfer_ref": ref("transfer", k),
            **{f"source_{n}": v for n, v in owner(source(k)).items()},
            **{f"dest_{n}": v for n, v in owner(dest(k)).items()},
            "currency": "NGN", "amount_minor": amount_of(k), "stage": stage or "ReservationDenied",
            "status": status, "is_terminal": True, "is_successful": status == "completed",
            "requested_at": at, "decided_at": at, "origin": "created", "poll_attempts": 0,
            "created_at": at, "updated_at": at, "match_status": "unmatched",
        }  # fmt: skip

    def posting(pid: int, journal: int, line: int, receipt: uuid.UUID, h: int, at: datetime,
                side: str, amount: int) -> Row:  # fmt: skip
        balances[h] += amount if side == "credit" else -amount
        return {
            "id": pid, "journal_ref": ref("journal", journal), "line_ref": ref("line", line),
            "receipt_ref": receipt, "holding_id": h + 1, "posted_at": at, "side": side,
            "effect": "increase" if side == "credit" else "decrease",
            "kind": "transfer_settlement", "amount_minor": amount, "currency": "NGN",
            "partition": "customer_liability", "normal_side": "credit_normal", "ingested_at": at,
            "match_status": "unmatched",
        }  # fmt: skip

    def notification(nid: int, event: int, kind: str, transfer: uuid.UUID | None,
                     receipt: uuid.UUID | None, h: int, amount: int, at: datetime) -> Row:  # fmt: skip
        return {
            "id": nid, "event_id": str(ref("event", event)), "event_type": kind,
            "transfer_ref": transfer, "receipt_ref": receipt, **owner(h),
            "account_number": account_number(h), "amount_minor": amount, "currency": "NGN",
            "claimed_status": "FAILED" if kind == "TRANSACTION_FAILED" else "SUCCESSFUL",
            "occurred_at": at, "created_at": at, "match_status": "unmatched",
        }  # fmt: skip

    def transfers() -> Iterator[Row]:
        yield from (transfer(k, "completed") for k in settled)
        if extra:
            yield from (transfer(k, "failed") for k in range(settled_all, failed_end))
            yield from (transfer(k, "reservation_denied") for k in range(failed_end, size))

    def postings() -> Iterator[Row]:
        for k in settled:
            receipt, amount = ref("receipt", k), amount_of(k)
            yield posting(2 * k + 1, k, 2 * k, receipt, source(k), when(k), "debit", amount)
            yield posting(2 * k + 2, k, 2 * k + 1, receipt, dest(k), when(k), "credit", amount)
        for c in range(credits if extra else 0):
            receipt, n = ref("credit_receipt", c), 10**9 + c
            yield posting(2 * settled_all + c + 1, n, n, receipt, dest(c * 3), when(c), "credit", 1_000_000 + c)  # fmt: skip

    def notifications() -> Iterator[Row]:
        for k in settled:
            yield notification(k + 1, k, "TRANSACTION_COMPLETED", ref("transfer", k), ref("receipt", k), source(k), amount_of(k), when(k))  # fmt: skip
        if not extra:
            return
        for k in range(settled_all, failed_end):
            yield notification(k + 1, k, "TRANSACTION_FAILED", ref("transfer", k), None, source(k), amount_of(k), when(k))  # fmt: skip
        for c in range(credits):
            receipt = None if c % 4 == 0 else ref("credit_receipt", c)
            at = when(c) + timedelta(seconds=30)
            yield notification(failed_end + c + 1, 10**9 + c, "PAYMENT_RECEIVED", None, receipt, dest(c * 3), 1_000_000 + c, at)  # fmt: skip

    return Streams(transfers, postings, notifications, balances, base, when(settled.stop))


def store_tables(streams: Streams, *, waiting: bool = False) -> list[tuple[str, Iterable[Row]]]:
    """A whole store's tables in foreign-key order: holdings and their locators (the even ones
    have a bank account), the three streams, then each holding's snapshot (at the balance the
    postings, once written, sum to). With `waiting`, each holding also has an activity cursor
    last read before its snapshot, as in a running fleet, where a snapshot follows each read:
    every snapshot waits for its poller to read past it."""
    at, base, n = streams.last + timedelta(hours=1), streams.base, len(streams.balances)
    holdings = (
        {"id": h + 1, **owner(h), "unit_kind": "fiat", "currency": "NGN", "watched": True,
         "discovered_at": base, "updated_at": base}
        for h in range(n)
    )  # fmt: skip
    locators = (
        {"id": h // 2 + 1, "holding_id": h + 1, "locator_ref": ref("locator", h),
         "form": "nigerian_bank_account", "display": f"000:{account_number(h)}:Bench",
         "bank_code": "000", "account_number": account_number(h), "account_name": "Bench"}
        for h in range(0, n, 2)
    )  # fmt: skip
    snapshots = (
        {"holding_id": h + 1, "settled_minor": amount, "available_minor": amount,
         "reserved_minor": 0, "projection_state": "Projected", "observed_at": at}
        for h, amount in enumerate(streams.balances)
    )  # fmt: skip
    cursors = (
        {"holding_id": h + 1, "last_polled_at": streams.last, "consecutive_errors": 0,
         "postings_read": 0, "reads_completed": 1}
        for h in range(n if waiting else 0)
    )  # fmt: skip
    tables = [("holdings", holdings), ("locators", locators), *new_records(streams)]
    return [*tables, ("balance_snapshots", snapshots), ("activity_cursors", cursors)]


def new_records(streams: Streams) -> list[tuple[str, Iterable[Row]]]:
    """The three streams' tables alone: records arriving in a store already filled."""
    return [(t, getattr(streams, t)()) for t in ("transfers", "postings", "notifications")]


def recon_delivery(event_id: str, kind: str, at: datetime, data: Row, **columns: Any) -> Row:
    """A delivery row whose body is event `event_id` in the `recon` payload shape, created at
    `at` with `data`; `columns` are the row's others (state, times, headers)."""
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    whole = {"id": event_id, "event": kind, "createdAt": stamp, "data": data}
    body = json.dumps(whole, separators=(",", ":")).encode()
    digest = hashlib.sha256(body).hexdigest()
    return {"delivery_id": event_id, "body_sha256": digest, "body": body, "scheme": "standard",
            "event_type": kind, "original": True, **columns}  # fmt: skip


def write(url: str, tables: Iterable[tuple[str, Iterable[Row]]], *, numbered: bool = True) -> None:
    """Rows into their tables, in one transaction, then fresh statistics. Without `numbered`
    the ids are the database's and the statistics are left alone: new records since a pass,
    written as the ingesting processes would write them."""
    if url.startswith("sqlite"):
        lite = sqlite3.connect(url.removeprefix("sqlite:///"))
        for table, columns, values in _columns_and_values(tables, numbered):
            marks = ", ".join("?" * len(columns))
            statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            lite.executemany(statement, ([_sqlite(v) for v in row] for row in values))
        lite.commit()
        if numbered:
            lite.execute("ANALYZE")
        lite.close()
        return
    import psycopg

    with psycopg.connect(plain(url)) as conn, conn.cursor() as cur:
        for table, columns, values in _columns_and_values(tables, numbered):
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
            if "id" in columns:
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )
        conn.commit()
    if numbered:
        with psycopg.connect(plain(url), autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")


def _columns_and_values(
    tables: Iterable[tuple[str, Iterable[Row]]], numbered: bool
) -> Iterator[tuple[str, list[str], Iterator[list[Any]]]]:
    for table, given in tables:
        rows = iter(given)
        first = next(rows, None)
        if first is not None:
            columns = [k for k in first if numbered or k != "id"]
            yield table, columns, ([row[k] for k in columns] for row in chain([first], rows))


def _sqlite(value: Any) -> Any:
    """A value as the SQLite store holds it (UUIDs as hex, UTC times as naive text)."""
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    return value
