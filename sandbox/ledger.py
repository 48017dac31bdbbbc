"""The ledger: committed postings per holding, reservations, and the lagging balance projection.

Postings of a holding live in one list kept sorted by (postedAt ms, receiptRef, lineRef), each a
plain tuple of ints, so a million of them stay compact and a cursor is found with ``bisect``
instead of a scan. Balances are derived from these postings; the snapshot a client reads trails
them by the configured projection lag, as the spec warns.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import deque
from collections.abc import Iterable
from typing import Any

import msgspec

from sandbox.config import format_timestamp
from sandbox.ids import uuid_text
from sandbox.units import unit_wire

# Row layout: (posted_ms, receipt, line, journal, amount, side); uuids as 128-bit ints.
Row = tuple[int, int, int, int, int, int]
CursorKey = tuple[int, int, int]
CREDIT = 0
DEBIT = 1

NEWEST_FIRST = "newest_first"
OLDEST_FIRST = "oldest_first"
SORT_DIRECTIONS = (NEWEST_FIRST, OLDEST_FIRST)

JOURNAL_KIND = "transfer_settlement"
LEDGER_PARTITION = "customer_liability"
LEDGER_NORMAL_SIDE = "credit_normal"


class Holding:
    """One balance: its postings, its reservations, and what the projection has caught up to."""

    __slots__ = (
        "account_ref",
        "currency",
        "endpoint_ref",
        "holding_ref",
        "issued",
        "kinds",
        "pending",
        "projected",
        "projection_version",
        "rendered",
        "reservations",
        "rows",
        "settled",
    )

    def __init__(self, holding_ref: str, account_ref: str, endpoint_ref: str, currency: str):
        self.holding_ref = holding_ref
        self.account_ref = account_ref
        self.endpoint_ref = endpoint_ref
        self.currency = currency
        self.rows: list[Row] = []
        self.settled = 0
        self.projected = 0
        self.projection_version = 0
        self.pending: deque[tuple[int, int]] = deque()
        self.reservations: dict[str, int] = {}
        # Cursors handed out, with their direction: a cursor is only valid as issued.
        self.issued: set[tuple[int, int, int, int]] = set()
        # Entries rendered ahead of time (``prerender``), by row: a page is then a byte join.
        # Safe to keep forever: an entry depends only on its row and the holding's currency.
        self.rendered: dict[Row, bytes] = {}
        # `journalKind` of the lines that are not `transfer_settlement` (fee legs under some
        # variants), by lineRef: rows stay six ints, and most holdings never use this.
        self.kinds: dict[int, str] = {}

    @property
    def value_unit(self) -> dict[str, Any]:
        return unit_wire(self.currency)

    @property
    def reserved(self) -> int:
        return sum(self.reservations.values())

    @property
    def available(self) -> int:
        """What a reservation is judged against: the ledger itself, not the lagging snapshot."""
        return self.settled - self.reserved

    def project(self, now_ms: int) -> None:
        """Fold into the snapshot every posting whose projection delay has passed."""
        while self.pending and self.pending[0][0] <= now_ms:
            self.projected += self.pending.popleft()[1]
            self.projection_version += 1

    def flush_projection(self) -> None:
        while self.pending:
            self.projected += self.pending.popleft()[1]
            self.projection_version += 1

    def last_key(self) -> CursorKey | None:
        if not self.rows:
            return None
        last = self.rows[-1]
        return (last[0], last[1], last[2])

    def load_sorted(self, rows: list[Row]) -> None:
        """Bulk path: take already-built rows, sort once, project at once (no lag)."""
        self.rows.extend(rows)
        self.rows.sort()
        total = sum(r[4] if r[5] == CREDIT else -r[4] for r in rows)
        self.settled += total
        self.projected += total
        self.projection_version += 1


def posting_time(holdings: Iterable[Holding], now_ms: int, receipt: int, lines: list[int]) -> int:
    """The postedAt for a new journal: now, unless that would not sort after what is there.

    A posting at an equal postedAt must still sort after every posting already in the holding,
    so that no new posting ever lands behind a cursor a reader already holds.
    """
    legs = list(zip(holdings, lines, strict=True))
    posted = now_ms
    for holding, _ in legs:
        last = holding.last_key()
        if last is not None:
            posted = max(posted, last[0])  # never backwards within a holding
    for holding, line in legs:
        last = holding.last_key()
        if last is not None and (posted, receipt, line) <= last:
            posted = last[0] + 1  # equal time would sort before: step one millisecond on
    return posted


def append_row(holding: Holding, row: Row, lag_ms: int, kind: str = JOURNAL_KIND) -> None:
    """Commit one leg: into the sorted rows, into the truth, and queued for the projection."""
    if kind != JOURNAL_KIND:
        holding.kinds[row[2]] = kind
    if holding.rows and row <= holding.rows[-1]:
        bisect.insort(holding.rows, row)
    else:
        holding.rows.append(row)
    delta = row[4] if row[5] == CREDIT else -row[4]
    holding.settled += delta
    if lag_ms <= 0:
        holding.project(row[0])
        holding.projected += delta
        holding.projection_version += 1
    else:
        holding.pending.append((row[0] + lag_ms, delta))


def find_key(holding: Holding, key: CursorKey) -> int | None:
    """Index of the posting the cursor names, or ``None`` when it names none (altered)."""
    i = bisect.bisect_left(holding.rows, key)
    if i < len(holding.rows) and holding.rows[i][:3] == key:
        return i
    return None


def page(holding: Holding, direction: str, size: int, after: CursorKey | None) -> list[Row]:
    """One page in ``direction`` strictly after ``after`` (validated by the caller)."""
    rows = holding.rows
    if direction == OLDEST_FIRST:
        start = 0
        if after is not None:
            start = bisect.bisect_right(rows, (*after, 1 << 130))
        return rows[start : start + size]
    end = len(rows)
    if after is not None:
        end = bisect.bisect_left(rows, after)
    return rows[max(0, end - size) : end][::-1]


def more_after(holding: Holding, direction: str, key: CursorKey) -> bool:
    """Whether any posting follows ``key`` in ``direction``: is a page ending there the last?"""
    rows = holding.rows
    if direction == OLDEST_FIRST:
        return bisect.bisect_right(rows, (*key, 1 << 130)) < len(rows)
    return bisect.bisect_left(rows, key) > 0


def render_entry(holding: Holding, row: Row) -> dict[str, Any]:
    """One activity entry, field for field as the spec lists them."""
    credit = row[5] == CREDIT
    return {
        "postedAt": format_timestamp(row[0]),
        "receiptRef": uuid_text(row[1]),
        "journalRef": uuid_text(row[3]),
        "lineRef": uuid_text(row[2]),
        "journalKind": holding.kinds.get(row[2], JOURNAL_KIND),
        "postingSide": "credit" if credit else "debit",
        "balanceEffect": "increase" if credit else "decrease",
        "amountMinorUnits": str(row[4]),
        "valueUnit": holding.value_unit,
        "ledgerPartition": LEDGER_PARTITION,
        "ledgerNormalSide": LEDGER_NORMAL_SIDE,
    }


def entry_json(holding: Holding, row: Row) -> bytes:
    """One activity entry as JSON, byte for byte what encoding ``render_entry`` gives."""
    ready = holding.rendered.get(row)
    if ready is not None:
        return ready
    return msgspec.json.encode(render_entry(holding, row))


def entries_json(holding: Holding, rows: list[Row]) -> msgspec.Raw:
    """A page's ``entries`` array, ready to embed in the response as it is."""
    try:
        # All rendered ahead (the benchmark's world): lookups only, no Python call per entry.
        parts = list(map(holding.rendered.__getitem__, rows))
    except KeyError:
        parts = [entry_json(holding, row) for row in rows]
    return msgspec.Raw(b"[" + b",".join(parts) + b"]")


def prerender(holding: Holding) -> None:
    """Render every current entry once, so reading them later costs a lookup, not a render.

    For the catch-up benchmark, where the sandbox stands in for the provider and its own
    rendering would otherwise be measured along with the reader. Costs about 0.5 KB per posting.
    """
    encode = msgspec.json.encode
    holding.rendered.update((row, encode(render_entry(holding, row))) for row in holding.rows)


def projection_ref(holding: Holding, which: str) -> str:
    """A stable uuid naming one state of the projection (changes when the projection moves)."""
    digest = hashlib.sha256(
        f"{holding.holding_ref}:{which}:{holding.projection_version}:{len(holding.reservations)}".encode()
    ).digest()
    return uuid_text(int.from_bytes(digest[:16], "big"))


def render_holding_balance(holding: Holding, now_ms: int) -> dict[str, Any]:
    holding.project(now_ms)
    reserved = holding.reserved
    return {
        "holdingRef": holding.holding_ref,
        "valueUnit": holding.value_unit,
        "settledMinorUnits": str(holding.projected),
        "availableMinorUnits": str(holding.projected - reserved),
        "activeReservedMinorUnits": str(reserved),
        "settledProjectionRef": projection_ref(holding, "settled"),
        "availableProjectionRef": projection_ref(holding, "available"),
        "activeReservationRefs": sorted(holding.reservations),
        "projectionState": "Projected",
    }
