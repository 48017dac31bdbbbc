"""Balance activity: committed postings page by page, with the position to resume from.

The cursor is four strings (`afterPostedAt`, `afterReceiptRef`, `afterLineRef`,
`sortDirection`). Whenever the gateway gives one in `nextCursor` we keep it byte for byte and
resume exactly as returned: re-formatting a timestamp (say `.120Z` as `.12+00:00`) could name a
different position. The spec does not show what `nextCursor` is on the last page, nor what its
fields are called, so both are read tolerantly:

- a page with entries but `nextCursor` null or absent ends at its last entry, and that entry's
  own `postedAt`, `receiptRef` and `lineRef` (exact text, with the direction read) are the
  position to resume from; `cursor_source` says which of the two a position is;
- inside `nextCursor` each part may be named as the query parameter (`afterPostedAt`) or as the
  entry field (`postedAt`); a missing `sortDirection` is the page's, else the one asked.

Whether a page ends the read is not "shorter than asked" either: a provider may cap pages below
what we ask without saying so. See `ActivityPage.ends_read`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Literal
from uuid import UUID

import msgspec

from upstream.errors import ProtocolError
from upstream.wire.balances import Posting, parse_postings
from upstream.wire.common import HoldingAddress
from upstream.wire.decoding import decode
from upstream.wire.evidence import Evidence

OLDEST_FIRST: Final = "oldest_first"
NEWEST_FIRST: Final = "newest_first"
#: The most we ever ask for in one page: our own bound, not the provider's (its cap is not
#: shown; a smaller one is learned, see `upstream.activity_walk`).
MAX_PAGE_SIZE: Final = 200

CursorSource = Literal["gateway", "entry"]
#: The position came from the gateway's `nextCursor`, exactly as returned.
FROM_GATEWAY: Final[CursorSource] = "gateway"
#: The gateway gave no `nextCursor`: the position is the page's last entry, exactly as listed.
FROM_ENTRY: Final[CursorSource] = "entry"


#: Names each cursor part may carry inside `nextCursor` (the spec shows only the query names).
_PART_NAMES: Final = {
    "after_posted_at": ("afterPostedAt", "postedAt"),
    "after_receipt_ref": ("afterReceiptRef", "receiptRef"),
    "after_line_ref": ("afterLineRef", "lineRef"),
}
_DIRECTION_NAMES: Final = ("sortDirection", "direction")


class ActivityCursor(msgspec.Struct, frozen=True, kw_only=True):
    """A position in one holding's postings: the gateway's `nextCursor`, or an entry's own."""

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


class EntryPosition(msgspec.Struct, frozen=True, kw_only=True):
    """Where one entry sits, as the exact text the gateway listed it with."""

    posted_at: str
    receipt_ref: str
    line_ref: str

    def cursor(self, direction: str) -> ActivityCursor:
        """This entry as a position to resume after, in the direction it was read."""
        return ActivityCursor(
            after_posted_at=self.posted_at,
            after_receipt_ref=self.receipt_ref,
            after_line_ref=self.line_ref,
            sort_direction=direction,
        )


def parse_cursor(raw: dict[str, Any], where: str, fallback_direction: str) -> ActivityCursor:
    """Read `nextCursor`, whatever the gateway calls its parts; all three positional ones needed.

    The direction is the cursor's own, else `fallback_direction` (the page's, else the one
    asked): a cursor is only ever resumed in the direction it was read in.
    """
    parts = {field: _part(raw, names, where) for field, names in _PART_NAMES.items()}
    missing = [names[0] for field, names in _PART_NAMES.items() if parts[field] is None]
    if missing:
        found = ", ".join(sorted(raw)) or "nothing"
        raise ProtocolError(
            f"{where}: no {', '.join(missing)} (nor its entry-field name) in nextCursor, "
            f"which holds {found}; a cursor with missing parts cannot be resumed"
        )
    return ActivityCursor(
        after_posted_at=parts["after_posted_at"] or "",
        after_receipt_ref=parts["after_receipt_ref"] or "",
        after_line_ref=parts["after_line_ref"] or "",
        sort_direction=_part(raw, _DIRECTION_NAMES, where) or fallback_direction,
    )


def _part(raw: dict[str, Any], names: Sequence[str], where: str) -> str | None:
    """The first of `names` present (and not null) in the cursor; a string, or refused."""
    name = next((name for name in names if raw.get(name) is not None), None)
    return None if name is None else decode(raw[name], str, f"{where}.{name}")


class ActivityPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of postings and where to resume after it.

    `gateway_cursor` is the gateway's `nextCursor` (None when null or absent). `next_cursor` is
    where to resume: the gateway's cursor when it gave one, else the last entry's position,
    else (an empty page) the cursor this page was asked with. `cursor_source` says which.
    """

    holding: HoldingAddress
    entries: tuple[Posting, ...]
    gateway_cursor: ActivityCursor | None
    requested_cursor: ActivityCursor | None
    first_position: EntryPosition | None
    last_position: EntryPosition | None
    sort_direction: str
    page_size: int
    http_status: int
    evidence: tuple[Evidence, ...] = ()

    @property
    def next_cursor(self) -> ActivityCursor | None:
        """Where the next read resumes (see the class docstring)."""
        if self.gateway_cursor is not None:
            return self.gateway_cursor
        if self.last_position is not None:
            return self.last_position.cursor(self.sort_direction)
        return self.requested_cursor

    @property
    def cursor_source(self) -> CursorSource | None:
        """`FROM_GATEWAY`, `FROM_ENTRY`, or None when the page kept the cursor it was asked with."""
        if self.gateway_cursor is not None:
            return None if self.gateway_cursor == self.requested_cursor else FROM_GATEWAY
        return FROM_ENTRY if self.last_position is not None else None

    def ends_read(self, largest_served: int) -> bool:
        """Whether the provider has nothing after this page right now.

        `largest_served` is the most entries any earlier page carried (0 when nothing is known).
        An empty page ends the read, and so does a page without `nextCursor` (a provider that
        gives none marks its last page that way). A full page never does. A page shorter than
        asked ends it only if the provider has served a larger page before: one as large as
        any it ever served may have been cut at an unshown cap, so the read goes on, and an
        empty next page is the worst that costs.
        """
        count = len(self.entries)
        if count == 0 or self.gateway_cursor is None:
            return True
        if count >= self.page_size:
            return False
        return count < largest_served


def _positions(items: Sequence[object]) -> tuple[EntryPosition | None, EntryPosition | None]:
    """The first and last entries' positions, as listed (they parsed, so the parts are text)."""
    if not items:
        return None, None

    def position(item: object) -> EntryPosition:
        assert isinstance(item, dict)
        return EntryPosition(
            posted_at=str(item["postedAt"]),
            receipt_ref=str(item["receiptRef"]),
            line_ref=str(item["lineRef"]),
        )

    return position(items[0]), position(items[-1])


class _WirePage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The activity value; its entries are read by `parse_postings`, its cursor by
    `parse_cursor`, both needing the text exactly as listed."""

    entries: list[Any]
    account_ref: UUID | None = None
    endpoint_ref: UUID | None = None
    holding_ref: UUID | None = None
    sort_direction: str | None = None
    next_cursor: dict[str, Any] | None = None


def parse_activity_page(
    value: dict[str, Any],
    where: str,
    *,
    holding: HoldingAddress,
    requested: ActivityCursor | None,
    page_size: int,
    http_status: int,
    evidence: tuple[Evidence, ...],
    sort_direction: str | None = None,
) -> ActivityPage:
    """Read the activity value into a page, checking that it is the holding we asked about.

    `sort_direction` is the direction asked, used when neither the cursor nor the page names
    one. The page's `sort_direction` is the direction the gateway says it served (a provider
    that ignores a direction it does not know may serve its default instead; the reader checks).
    """
    page = decode(value, _WirePage, where)
    for name, got, want in (
        ("accountRef", page.account_ref, holding.account_ref),
        ("endpointRef", page.endpoint_ref, holding.endpoint_ref),
        ("holdingRef", page.holding_ref, holding.holding_ref),
    ):
        if got is not None and got != want:
            raise ProtocolError(f"{where}.{name}: answered for {got}, asked for {want}")
    asked = sort_direction or (requested.sort_direction if requested else None)
    direction = page.sort_direction or asked
    if direction is None:
        raise ProtocolError(f"{where}.sortDirection: missing, and no direction was asked")
    entries = parse_postings(page.entries, f"{where}.entries")
    first, last = _positions(page.entries)
    raw_next = page.next_cursor
    return ActivityPage(
        holding=holding,
        entries=entries,
        gateway_cursor=(
            None if raw_next is None else parse_cursor(raw_next, f"{where}.nextCursor", direction)
        ),
        requested_cursor=requested,
        first_position=first,
        last_position=last,
        sort_direction=direction,
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
    largest_served: int = 0,
) -> Iterator[ActivityPage]:
    """Yield pages, one request each, resuming from each page's cursor, to the provider's end.

    The largest page seen so far tells a capped page from the last (`ActivityPage.ends_read`).
    """
    while True:
        page = fetch(cursor)
        yield page
        if page.ends_read(largest_served):
            return
        largest_served = max(largest_served, len(page.entries))
        cursor = page.next_cursor
