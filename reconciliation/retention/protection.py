"""What no prune may remove: items an open alert names, and items still waiting to match.

An alert's evidence names its items by our row ids (and deliveries also by the provider's
delivery id); see reconciliation/drift/evidence.py and reconciliation/operator/alert_evidence.py. The
evidence of every alert that is not resolved is read once per run (alerts are few: a pass opens
at most a capped number) and walked for those names, so whatever a person may still open from
an alert stays in the store. An alert about a whole holding (a balance mismatch, an audit's
divergence, a stuck poller: `holdingRef` at the top of its evidence) keeps every posting of
that holding: what a person checks such an alert against is the holding's postings.

"Unmatched" is what the matcher still waits on: an item in the match backlog, an item marked
'exception' for a person to decide, or an item newer than the stream's watermark (no pass has
seen it yet).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import ColumnElement, exists, or_, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN
from reconciliation.matching.backlog import TRANSFERLESS, watermark_name
from reconciliation.store import watermarks
from reconciliation.store.models import EXCEPTION, Alert, MatchBacklog

#: Evidence keys naming one of our rows, by the kind of row.
ROW_KEYS: Final = {
    "postingId": "posting",
    "posting_id": "posting",
    "notificationId": "notification",
    "notification_id": "notification",
    "transferId": "transfer",
    "transfer_id": "transfer",
    "snapshotId": "snapshot",
    "deliveryPk": "delivery",
    "deliveryRowId": "delivery",
    "quarantined_row_id": "delivery",
    "row_id": "delivery",
}
#: Evidence keys naming a delivery by the provider's delivery id.
DELIVERY_ID_KEYS: Final = ("deliveryId", "delivery_id")


@dataclass(frozen=True, slots=True)
class OpenAlertRefs:
    """Row ids (by kind) and delivery ids that an alert not yet resolved names."""

    rows: dict[str, frozenset[int]] = field(default_factory=dict)
    delivery_ids: frozenset[str] = frozenset()
    #: Holdings (by holding_ref, as text) an alert is about as a whole.
    holding_refs: frozenset[str] = frozenset()

    def names(self, kind: str, row_id: int) -> bool:
        return row_id in self.rows.get(kind, frozenset())


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        anchor_kind = value.get("anchorKind")
        if isinstance(anchor_kind, str) and isinstance(value.get("anchorId"), int):
            yield anchor_kind, value["anchorId"]
        for key, inner in value.items():
            if key in ROW_KEYS and isinstance(inner, int) and not isinstance(inner, bool):
                yield ROW_KEYS[key], inner
            elif key in DELIVERY_ID_KEYS and isinstance(inner, str):
                yield "delivery_id", inner
            else:
                yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def open_alert_refs(session: Session) -> OpenAlertRefs:
    """Everything the evidence of open and acknowledged alerts names."""
    rows: dict[str, set[int]] = {}
    delivery_ids: set[str] = set()
    holding_refs: set[str] = set()
    for evidence in session.scalars(
        select(Alert.evidence).where(Alert.state.in_((OPEN, ACKNOWLEDGED)))
    ):
        if isinstance(evidence, dict) and isinstance(evidence.get("holdingRef"), str):
            holding_refs.add(evidence["holdingRef"])
        for kind, value in _walk(evidence):
            if kind == "delivery_id":
                delivery_ids.add(value)
            else:
                rows.setdefault(kind, set()).add(value)
    return OpenAlertRefs(
        rows={k: frozenset(v) for k, v in rows.items()},
        delivery_ids=frozenset(delivery_ids),
        holding_refs=frozenset(holding_refs),
    )


def still_waiting(
    session: Session, stream: str, item_id: ColumnElement[int], match_status: ColumnElement[str]
) -> ColumnElement[bool]:
    """SQL: the item is unmatched in the sense above (backlog, exception, or not seen yet)."""
    seen = watermarks.read(session, watermark_name(stream), 0)
    kinds = [stream, TRANSFERLESS] if stream == "notification" else [stream]
    queued = exists().where(MatchBacklog.kind.in_(kinds), MatchBacklog.item_id == item_id)
    return or_(match_status == EXCEPTION, item_id > seen, queued)
