"""The inbox as people and programs read it: one row's summary, a page, a row with its bytes.

Both the web API (`/deliveries`) and the CLI (`recon deliveries`) show these shapes, so they
live here, below both, rather than in either.
"""

from __future__ import annotations

import base64
from datetime import datetime

import msgspec

from reconciliation.notifications.inbox_access import BulkReplay
from reconciliation.store.models import Delivery


class DeliverySummary(msgspec.Struct, rename="camel"):
    """One inbox row without its body."""

    id: int
    delivery_id: str
    event_type: str | None
    state: str
    scheme: str
    received_at: datetime
    attempts: int
    error: str | None
    processed_at: datetime | None
    body_bytes: int


class DeliveryPageOut(msgspec.Struct, rename="camel"):
    """A page of the inbox, newest first; pass `nextCursor` back as `cursor` for the next."""

    items: list[DeliverySummary]
    next_cursor: str | None


class DeliveryDetail(msgspec.Struct, rename="camel"):
    """One inbox row with the headers kept and the exact body received.

    `body` is the body as text when it is UTF-8, `bodyBase64` always holds the exact bytes.
    """

    delivery: DeliverySummary
    headers: dict[str, str]
    body_sha256: str
    body: str | None
    body_base64: str


def summarise(row: Delivery) -> DeliverySummary:
    """The API view of a row (shared with the CLI's JSON output)."""
    return DeliverySummary(
        id=row.id,
        delivery_id=row.delivery_id,
        event_type=row.event_type,
        state=row.state,
        scheme=row.scheme,
        received_at=row.received_at,
        attempts=row.attempts,
        error=row.error,
        processed_at=row.processed_at,
        body_bytes=len(row.body),
    )


def detail(row: Delivery) -> DeliveryDetail:
    """The API view of a row with its bytes."""
    try:
        text: str | None = row.body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return DeliveryDetail(
        delivery=summarise(row),
        headers={str(k): str(v) for k, v in row.headers.items()},
        body_sha256=row.body_sha256,
        body=text,
        body_base64=base64.b64encode(row.body).decode(),
    )


class BulkReplayOut(msgspec.Struct, rename="camel"):
    """What a bulk replay did: the rows put back to pending and enqueued, and how many of that
    state are still waiting (call again until `remaining` is 0)."""

    state: str
    replayed: int
    row_ids: list[int]
    remaining: int


def replay_summary(replay: BulkReplay) -> BulkReplayOut:
    """The API and CLI view of a bulk replay."""
    return BulkReplayOut(
        state=replay.state,
        replayed=len(replay.row_ids),
        row_ids=replay.row_ids,
        remaining=replay.remaining,
    )
