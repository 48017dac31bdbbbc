"""Data for bench/reconcile.py: the three streams, generated as iterators of rows.

Refs are deterministic from the row number (a tag in the high bits), so postings, transfers and
notifications agree without keeping anything in memory: every stream is an iterator that
bench/reconcile_load.py writes into a store as it is produced.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

HOLDINGS = 1_000
BASE = datetime(2026, 10, 1, tzinfo=UTC)
ISO = "%Y-%m-%d %H:%M:%S.%f"

#: High 32 bits of the generated uuids, per kind of reference: refs are deterministic from the
#: row number, so the streams agree without keeping anything in memory.
TAGS = {
    "account": 1,
    "endpoint": 2,
    "holding": 3,
    "locator": 4,
    "transfer": 5,
    "receipt": 6,
    "journal": 7,
    "line": 8,
    "credit_receipt": 9,
    "event": 10,
}


def ref(kind: str, n: int) -> uuid.UUID:
    return uuid.UUID(int=(TAGS[kind] << 96) | n)


class Shape:
    """How `size` records per stream split into the kinds of traffic."""

    def __init__(self, size: int) -> None:
        self.settled = size * 2 // 5
        self.failed = size * 2 // 5
        self.denied = size - self.settled - self.failed
        self.credits = size - 2 * self.settled
        self.size = size


def holding_of_source(k: int) -> int:
    return 2 * (k % (HOLDINGS // 2)) + 1  # odd holdings: internal, no locator


def holding_of_dest(k: int) -> int:
    return 2 * ((k * 7) % (HOLDINGS // 2))  # even holdings: have a bank account number


def account_number(h: int) -> str:
    return str(1_000_000_000 + h)


def amount_of(k: int) -> int:
    return 1_000 + (k * 7_919) % 10_000_000


def generate(shape: Shape, offset: int = 0, settled_only: int | None = None) -> dict[str, Any]:
    """Row iterators for every table, and the balance each holding should show."""
    balances = [0] * HOLDINGS
    settled = settled_only if settled_only is not None else shape.settled
    first = offset

    def when(k: int) -> datetime:
        return BASE + timedelta(seconds=2 * k)

    def transfers() -> Iterator[tuple[Any, ...]]:
        for k in range(first, first + settled):
            yield _transfer(k, "completed", when(k))
        if settled_only is not None:
            return
        for k in range(shape.settled, shape.settled + shape.failed):
            yield _transfer(k, "failed", when(k))
        for k in range(shape.settled + shape.failed, shape.size):
            yield _transfer(k, "reservation_denied", when(k))

    def postings() -> Iterator[tuple[Any, ...]]:
        for k in range(first, first + settled):
            s, d, amount, at = holding_of_source(k), holding_of_dest(k), amount_of(k), when(k)
            balances[s] -= amount
            balances[d] += amount
            yield _posting(
                2 * k + 1, ref("journal", k), 2 * k, ref("receipt", k), s, at, "debit", amount
            )
            yield _posting(
                2 * k + 2, ref("journal", k), 2 * k + 1, ref("receipt", k), d, at, "credit", amount
            )
        if settled_only is not None:
            return
        for c in range(shape.credits):
            h, amount, at = holding_of_dest(c * 3), 1_000_000 + c, when(c)
            balances[h] += amount
            yield _posting(
                2 * shape.settled + c + 1,
                ref("journal", 10**9 + c),
                10**9 + c,
                ref("credit_receipt", c),
                h,
                at,
                "credit",
                amount,
            )

    def notifications() -> Iterator[tuple[Any, ...]]:
        for k in range(first, first + settled):
            yield _notification(
                k + 1,
                ref("event", k),
                "TRANSACTION_COMPLETED",
                ref("transfer", k),
                ref("receipt", k),
                holding_of_source(k),
                amount_of(k),
                when(k),
            )
        if settled_only is not None:
            return
        for k in range(shape.settled, shape.settled + shape.failed):
            yield _notification(
                k + 1,
                ref("event", k),
                "TRANSACTION_FAILED",
                ref("transfer", k),
                None,
                holding_of_source(k),
                amount_of(k),
                when(k),
            )
        start = shape.settled + shape.failed
        for c in range(shape.credits):
            h = holding_of_dest(c * 3)
            receipt = None if c % 4 == 0 else ref("credit_receipt", c)
            yield _notification(
                start + c + 1,
                ref("event", 10**9 + c),
                "PAYMENT_RECEIVED",
                None,
                receipt,
                h,
                1_000_000 + c,
                when(c) + timedelta(seconds=30),
            )

    return {
        "transfers": transfers,
        "postings": postings,
        "notifications": notifications,
        "balances": balances,
        "last": when(first + settled),
    }


def _transfer(k: int, status: str, at: datetime) -> tuple[Any, ...]:
    s, d = holding_of_source(k), holding_of_dest(k)
    stage = {"completed": "Settled", "failed": "Failed", "reservation_denied": "ReservationDenied"}
    return (
        k + 1,
        ref("transfer", k),
        ref("account", s),
        ref("endpoint", s),
        ref("holding", s),
        ref("account", d),
        ref("endpoint", d),
        ref("holding", d),
        "NGN",
        amount_of(k),
        stage[status],
        status,
        True,
        status == "completed",
        at,
        at,
        "created",
        0,
        at,
        at,
        "unmatched",
    )


TRANSFER_COLUMNS = (
    "id, transfer_ref, source_account_ref, source_endpoint_ref, source_holding_ref, "
    "dest_account_ref, dest_endpoint_ref, dest_holding_ref, currency, amount_minor, stage, status, "
    "is_terminal, is_successful, requested_at, decided_at, origin, poll_attempts, created_at, "
    "updated_at, match_status"
)


def _posting(
    pid: int,
    journal: uuid.UUID,
    line: int,
    receipt: uuid.UUID,
    h: int,
    at: datetime,
    side: str,
    amount: int,
) -> tuple[Any, ...]:
    return (
        pid,
        journal,
        ref("line", line),
        receipt,
        h + 1,
        at,
        side,
        "increase" if side == "credit" else "decrease",
        "transfer_settlement",
        amount,
        "NGN",
        "customer_liability",
        "credit_normal",
        at,
        "unmatched",
    )


POSTING_COLUMNS = (
    "id, journal_ref, line_ref, receipt_ref, holding_id, posted_at, side, effect, kind, "
    "amount_minor, currency, partition, normal_side, ingested_at, match_status"
)


def _notification(
    nid: int,
    event: uuid.UUID,
    event_type: str,
    transfer: uuid.UUID | None,
    receipt: uuid.UUID | None,
    h: int,
    amount: int,
    at: datetime,
) -> tuple[Any, ...]:
    status = "FAILED" if event_type == "TRANSACTION_FAILED" else "SUCCESSFUL"
    number = account_number(h) if h % 2 == 0 else None
    return (
        nid,
        str(event),
        event_type,
        transfer,
        receipt,
        ref("account", h),
        ref("endpoint", h),
        ref("holding", h),
        number,
        amount,
        "NGN",
        status,
        at,
        at,
        "unmatched",
    )


NOTIFICATION_COLUMNS = (
    "id, event_id, event_type, transfer_ref, receipt_ref, account_ref, endpoint_ref, holding_ref, "
    "account_number, amount_minor, currency, claimed_status, occurred_at, created_at, match_status"
)
HOLDING_COLUMNS = "id, account_ref, endpoint_ref, holding_ref, unit_kind, currency, watched, discovered_at, updated_at"
LOCATOR_COLUMNS = (
    "id, holding_id, locator_ref, form, display, bank_code, account_number, account_name"
)
SNAPSHOT_COLUMNS = (
    "holding_id, settled_minor, available_minor, reserved_minor, projection_state, observed_at"
)


def holdings_rows() -> Iterator[tuple[Any, ...]]:
    for h in range(HOLDINGS):
        yield (
            h + 1,
            ref("account", h),
            ref("endpoint", h),
            ref("holding", h),
            "fiat",
            "NGN",
            True,
            BASE,
            BASE,
        )


def locator_rows() -> Iterator[tuple[Any, ...]]:
    for h in range(0, HOLDINGS, 2):
        number = account_number(h)
        yield (
            h // 2 + 1,
            h + 1,
            ref("locator", h),
            "nigerian_bank_account",
            f"000:{number}:Bench",
            "000",
            number,
            "Bench",
        )


def snapshot_rows(balances: list[int], at: datetime) -> Iterator[tuple[Any, ...]]:
    for h, amount in enumerate(balances):
        yield (h + 1, amount, amount, 0, "Projected", at)
