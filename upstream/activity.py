"""Balance activity: committed postings page by page, with the exact cursor to resume from.

The cursor is four strings the gateway chose (`afterPostedAt`, `afterReceiptRef`,
`afterLineRef`, `sortDirection`). We keep them byte for byte as returned: re-formatting a
timestamp (say `.120Z` as `.12+00:00`) could name a different position, and a cursor rebuilt
from our own data could skip or repeat postings. So a cursor is never made up: a page with
entries must carry one, and an empty page resumes from the cursor it was asked with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID

import msgspec

from upstream.errors import ProtocolError
from upstream.wire.balances import Posting, parse_postings
from upstream.wire.common import HoldingAddress
from upstream.wire.evidence import Evidence
from upstream.wire.reader import Fields

OLDEST_FIRST = "oldest_first"
NEWEST_FIRST = "newest_first"
MAX_PAGE_SIZE = 200


class ActivityCursor(msgspec.Struct, frozen=True, kw_only=True):
    """A position in one holding's postings, exactly as the gateway returned it."""

    after_posted_at: str
    after_receipt_ref: str
    after_line_ref: str
    sort_direction: str

    def as_query(self) -> dict[str, str]:
        """The four query parameters, together, untouched."""
        return {
            "afterPostedAt": self.after_posted_at,
            "afterReceiptRef": self.after_receipt_ref,
            "afterLineRef": self.after_line_ref,
            "sortDirection": self.sort_direction,
        }


def parse_cursor(f: Fields, page_direction: str | None) -> ActivityCursor:
    """Read `nextCursor`. The direction is the cursor's own, else the page's (both gateway's)."""
    direction = f.opt_text("sortDirection") or page_direction
    if direction is None:
        raise ProtocolError(f"{f.path}.sortDirection: required field is missing")
    return ActivityCursor(
        after_posted_at=f.text("afterPostedAt"),
        after_receipt_ref=f.text("afterReceiptRef"),
        after_line_ref=f.text("afterLineRef"),
        sort_direction=direction,
    )


class ActivityPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of postings and where to resume after it.

    `next_cursor` is the gateway's `nextCursor`, or, for an empty page, the cursor this page was
    asked with (None when reading from the start found nothing). `is_last` is True when the
    page was shorter than asked: there is nothing more right now.
    """

    holding: HoldingAddress
    entries: tuple[Posting, ...]
    next_cursor: ActivityCursor | None
    requested_cursor: ActivityCursor | None
    sort_direction: str
    page_size: int
    http_status: int
    evidence: tuple[Evidence, ...] = ()

    @property
    def is_last(self) -> bool:
        """True after a short page: the reader stops here."""
        return len(self.entries) < self.page_size


def parse_activity_page(
    value: Fields,
    *,
    holding: HoldingAddress,
    requested: ActivityCursor | None,
    page_size: int,
    http_status: int,
    evidence: tuple[Evidence, ...],
) -> ActivityPage:
    """Read the activity value into a page, checking that it is the holding we asked about."""
    for name, want in (
        ("accountRef", holding.account_ref),
        ("endpointRef", holding.endpoint_ref),
        ("holdingRef", holding.holding_ref),
    ):
        got: UUID | None = value.opt_ref(name)
        if got is not None and got != want:
            raise ProtocolError(f"{value.path}.{name}: answered for {got}, asked for {want}")
    direction = value.opt_text("sortDirection")
    entries = parse_postings(value.array("entries"), f"{value.path}.entries")
    raw_next = value.opt_obj("nextCursor")
    if raw_next is not None:
        next_cursor: ActivityCursor | None = parse_cursor(raw_next, direction)
    elif entries:
        raise ProtocolError(
            f"{value.path}.nextCursor: missing on a page with {len(entries)} entries; "
            "refusing to make up a cursor"
        )
    else:
        next_cursor = requested
    return ActivityPage(
        holding=holding,
        entries=entries,
        next_cursor=next_cursor,
        requested_cursor=requested,
        sort_direction=(next_cursor.sort_direction if next_cursor else direction) or "",
        page_size=page_size,
        http_status=http_status,
        evidence=evidence,
    )


def check_paging(cursor: ActivityCursor | None, page_size: int, sort_direction: str) -> None:
    """Refuse, before any request, what the gateway would refuse or what would turn us around."""
    if isinstance(page_size, bool) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}, got {page_size!r}")
    if sort_direction not in (OLDEST_FIRST, NEWEST_FIRST):
        raise ValueError(f"sort_direction must be {OLDEST_FIRST} or {NEWEST_FIRST}")
    if cursor is not None and cursor.sort_direction != sort_direction:
        raise ValueError(
            f"the cursor was issued for {cursor.sort_direction}; resuming it as {sort_direction} "
            "would turn the reader around mid-stream"
        )


def iterate_pages(
    fetch: Callable[[ActivityCursor | None], ActivityPage],
    cursor: ActivityCursor | None,
) -> Iterator[ActivityPage]:
    """Yield pages, one request each, resuming from each page's cursor; stop after a short one."""
    while True:
        page = fetch(cursor)
        yield page
        if page.is_last:
            return
        cursor = page.next_cursor
