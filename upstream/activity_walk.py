"""Reading one holding's activity under any provider the spec allows.

The spec shows one sort direction (`newest_first`), no page-size cap and no last-page cursor,
so a reader that assumed any of them would stop, stall or re-read under some provider. This
reader assumes none:

- **Direction.** It reads `oldest_first` (one cursor, new postings always after it) only where
  the provider has accepted it. A provider never asked before is probed by the first read; a
  400 to it, with the same request served `newest_first`, means the direction is refused and
  the holding is read by a *walk* instead (`PagingTerms.oldest_first` carries the finding to
  the store, so every worker knows).
- **Walk.** Newest first from the top, page by page, down to the first entry strictly older
  than the holding's high-water `postedAt` (the top of the previous complete walk). The tie
  order among equal `postedAt` is not shown, so every entry at the high-water time is read
  again and the store's unique key drops the repeats. A walk's state (its cursor, its top, its
  target) is a `ReadPosition` committed with each page, so a crash resumes the walk mid-way.
  The first read of a holding is the same walk with no high-water.
- **Page size.** A refused page size (400) is asked again smaller (the provider's message may
  name its cap; else half) and the size it accepts is kept. A cap served silently is told from
  the end by `ActivityPage.ends_read` and the largest page ever served.

A position only ever changes by a page: a cursor the gateway gave (or, on a last page that has
none, the last entry's own position), never anything rebuilt from stored postings (invariant 3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Final

import msgspec

from upstream.activity import (
    NEWEST_FIRST,
    OLDEST_FIRST,
    ActivityCursor,
    ActivityPage,
    CursorSource,
)
from upstream.errors import InvalidInput

#: `fetch(cursor, page_size, direction)`: one activity request.
Fetch = Callable[[ActivityCursor | None, int, str], ActivityPage]

_NUMBER: Final = re.compile(r"\d+")


class PagingTerms(msgspec.Struct, frozen=True, kw_only=True):
    """What is known about the provider's paging, across every holding.

    `page_size` is what to ask for; `largest_served` the most entries one page ever carried
    (0: nothing known); `oldest_first` whether the provider accepts that direction (None: not
    asked yet).
    """

    page_size: int
    largest_served: int = 0
    oldest_first: bool | None = None


class ReadPosition(msgspec.Struct, frozen=True, kw_only=True):
    """Where a holding's read resumes: stored with every page, in the page's transaction.

    Oldest-first: `cursor` (and where it came from). Walking newest-first: `cursor` continues
    the walk in progress (None: start at the top), `walk_top` is the `postedAt` of the walk's
    first entry and `high_water` the one it stops below (the previous walk's top); each is the
    exact text the gateway listed.
    """

    cursor: ActivityCursor | None = None
    cursor_source: CursorSource | None = None
    walk_top: str | None = None
    high_water: str | None = None

    def direction(self, terms: PagingTerms) -> str:
        """The direction this holding is read in: its cursor's, a walk's, or the provider's."""
        if self.cursor is not None:
            return self.cursor.sort_direction
        if self.high_water is not None or self.walk_top is not None:
            return NEWEST_FIRST
        return NEWEST_FIRST if terms.oldest_first is False else OLDEST_FIRST


class PageStep(msgspec.Struct, frozen=True, kw_only=True):
    """One page read: its postings, the position after it, and whether the read is done."""

    page: ActivityPage
    position: ReadPosition
    done: bool


def smaller_page_size(size: int, refusal: InvalidInput) -> int | None:
    """The next page size to try after `size` was refused; None when there is none smaller.

    The refusal's wording is not shown; if it names a number below `size` (as in "from 1 to
    100"), the largest such number is tried, else half. Either way the answer is only kept once
    a page is served at it.
    """
    if size <= 1:
        return None
    text = refusal.info.provider_message or refusal.message
    named = [int(n) for n in _NUMBER.findall(text) if 1 <= int(n) < size]
    return max(named) if named else max(1, size // 2)


def _time(text: str) -> datetime:
    """A listed `postedAt`, parsed exactly as the entries' own (`upstream.wire.balances`)."""
    return datetime.fromisoformat(text)


class ActivityReader:
    """One read of one holding: which request to send, what a page means, when to stop.

    Holds the position and the terms in memory; the caller stores `PageStep.position` with
    the page's postings, and `terms` (what this read learned) whenever it changed.
    """

    def __init__(self, fetch: Fetch, position: ReadPosition, terms: PagingTerms) -> None:
        self._fetch = fetch
        self.position = position
        self.terms = terms
        self._high_water = _time(position.high_water) if position.high_water else None

    def read_page(self) -> PageStep:
        """Fetch the next page (settling a refused direction or size first) and step past it."""
        page = self._fetch_page()
        before = self.terms.largest_served
        if len(page.entries) > before:
            self.terms = msgspec.structs.replace(self.terms, largest_served=len(page.entries))
        return self._step(page, page.ends_read(before))

    def _fetch_page(self) -> ActivityPage:
        wanted = self.position.direction(self.terms)
        cursor = self.position.cursor
        size = self.terms.page_size
        direction = wanted
        while True:
            try:
                page = self._fetch(cursor if direction == wanted else None, size, direction)
            except InvalidInput as refusal:
                if direction == OLDEST_FIRST:
                    # The direction or the size was refused: ask the same size the way the spec
                    # shows. If that is served, oldest-first is what the provider refused.
                    direction = NEWEST_FIRST
                    continue
                smaller = smaller_page_size(size, refusal)
                if smaller is None:
                    raise
                # Refused either way round: the size, as far as can be told. Smaller, as wanted.
                size, direction = smaller, wanted
                continue
            if direction == OLDEST_FIRST and page.sort_direction != OLDEST_FIRST:
                # Served in its default direction instead: as good as refused.
                direction = NEWEST_FIRST
                continue
            break
        if direction == OLDEST_FIRST:
            self.terms = msgspec.structs.replace(self.terms, oldest_first=True)
        elif wanted == OLDEST_FIRST:
            if cursor is None:
                self.terms = msgspec.structs.replace(self.terms, oldest_first=False)
            self._leave_oldest_first()
        if size != self.terms.page_size:
            self.terms = msgspec.structs.replace(self.terms, page_size=size)
        return page

    def _leave_oldest_first(self) -> None:
        """From an oldest-first position to a walk that stops below where that cursor stood.

        The cursor names the newest posting stored; a walk from the top down to strictly below
        its `postedAt` reads everything after it (and its ties again), so nothing is lost.
        """
        cursor = self.position.cursor
        high_water = cursor.after_posted_at if cursor is not None else None
        self.position = ReadPosition(high_water=high_water)
        self._high_water = _time(high_water) if high_water else None

    def _step(self, page: ActivityPage, ends: bool) -> PageStep:
        if page.sort_direction == OLDEST_FIRST:
            source = page.cursor_source
            position = ReadPosition(
                cursor=page.next_cursor,
                cursor_source=source if source is not None else self.position.cursor_source,
            )
            self.position = position
            return PageStep(page=page, position=position, done=ends)
        return self._walk_step(page, ends)

    def _walk_step(self, page: ActivityPage, ends: bool) -> PageStep:
        current = self.position
        top = current.walk_top
        if top is None and page.first_position is not None:
            top = page.first_position.posted_at
        reached = self._high_water is not None and any(
            e.posted_at < self._high_water for e in page.entries
        )
        if reached or ends:
            # The walk is complete: its top is the next walk's high-water.
            position = ReadPosition(high_water=top if top is not None else current.high_water)
        else:
            source = page.cursor_source
            position = ReadPosition(
                cursor=page.next_cursor,
                cursor_source=source if source is not None else current.cursor_source,
                walk_top=top,
                high_water=current.high_water,
            )
        self.position = position
        return PageStep(page=page, position=position, done=reached or ends)
