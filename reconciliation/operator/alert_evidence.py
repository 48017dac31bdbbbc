"""Alerts as the console browses them: filtered, keyset-paged, and their evidence resolved.

An alert's evidence names items by our row ids and the provider's references (see
reconciliation/drift/evidence.py). Here those names become the items themselves, side by side
(the delivery, the notification it became, the posting, the transfer), so a person reads the
story without opening the store. Every lookup is by key with a LIMIT.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from foundation import excerpt, row_id
from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN, SEVERITIES, STATES, get_alert
from reconciliation.matching.candidates import CandidateError, Item, load_item
from reconciliation.notifications.inbox_views import DeliverySummary, summarise
from reconciliation.operator.alert_kinds import UnknownAlertKindError, checked_kind
from reconciliation.store.models import Alert, Delivery, Notification

#: Most alerts on one page.
PAGE_MAX: Final = 100
#: Age filters a person can pick: label -> minimum age.
AGES: Final = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
#: Most items of each kind resolved from one alert's evidence.
EVIDENCE_MAX: Final = 20
#: Evidence keys that name our row id of an item, by kind.
ROW_KEYS: Final = {
    "postingId": "posting",
    "posting_id": "posting",
    "notificationId": "notification",
    "notification_id": "notification",
    "transferId": "transfer",
    "transfer_id": "transfer",
}
#: Evidence keys that name a delivery: by inbox row id, or by the provider's delivery id.
DELIVERY_ROW_KEYS: Final = ("quarantined_row_id", "row_id", "deliveryRowId")
DELIVERY_ID_KEYS: Final = ("delivery_id", "deliveryId")


class BrowseError(Exception):
    """A filter or cursor the alert list does not understand; the message lists the choices."""


@dataclass(frozen=True, slots=True)
class AlertFilter:
    """What a person picked on the alerts page (None: any)."""

    state: str | None = "active"
    kind: str | None = None
    severity: str | None = None
    age: str | None = None


#: The state filter meaning every state, spelled as `recon alerts list --state all` spells it.
ANY_STATE: Final = "all"


@dataclass(frozen=True, slots=True)
class AlertPage:
    alerts: list[Alert]
    next_cursor: str | None
    kinds: list[str]


def alert_page(
    session: Session, chosen: AlertFilter, *, now: datetime, cursor: str | None, limit: int = 50
) -> AlertPage:
    """Newest first, keyset-paged on (opened_at, id)."""
    query = select(Alert).order_by(Alert.opened_at.desc(), Alert.id.desc())
    if chosen.state == "active":
        query = query.where(Alert.state.in_((OPEN, ACKNOWLEDGED)))
    elif chosen.state and chosen.state != ANY_STATE:
        if chosen.state not in STATES:
            raise BrowseError(
                f"state {chosen.state!r} is not one of active, {', '.join(STATES)}, {ANY_STATE}"
            )
        query = query.where(Alert.state == chosen.state)
    if chosen.severity:
        if chosen.severity not in SEVERITIES:
            raise BrowseError(f"severity {chosen.severity!r} is not one of {', '.join(SEVERITIES)}")
        query = query.where(Alert.severity == chosen.severity)
    if chosen.kind:
        try:
            checked_kind(chosen.kind)
        except UnknownAlertKindError as exc:
            raise BrowseError(str(exc)) from None
        query = query.where(Alert.kind == chosen.kind)
    if chosen.age:
        if chosen.age not in AGES:
            raise BrowseError(f"age {chosen.age!r} is not one of {', '.join(AGES)}")
        query = query.where(Alert.opened_at <= now - AGES[chosen.age])
    if cursor:
        at_text, _, id_text = cursor.rpartition("/")
        try:
            at, last = datetime.fromisoformat(at_text), row_id(id_text, what="cursor")
        except ValueError:
            raise BrowseError(
                f"cursor {excerpt(cursor)} is not valid: use the page's own links"
            ) from None
        query = query.where(or_(Alert.opened_at < at, and_(Alert.opened_at == at, Alert.id < last)))
    size = max(1, min(limit, PAGE_MAX))
    rows = list(session.scalars(query.limit(size + 1)))
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = f"{rows[-1].opened_at.isoformat()}/{rows[-1].id}" if more and rows else None
    kinds = [
        str(k)
        for k in session.scalars(select(Alert.kind).distinct().order_by(Alert.kind).limit(50))
    ]
    return AlertPage(rows, next_cursor, kinds)


@dataclass(slots=True)
class Evidence:
    """An alert with the items its evidence names, by kind."""

    alert: Alert
    items: dict[str, list[Item]] = field(default_factory=dict)
    deliveries: list[DeliverySummary] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _walk(value: Any, found: dict[str, set[Any]]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ROW_KEYS and isinstance(inner, int):
                found[ROW_KEYS[key]].add(inner)
            elif key in DELIVERY_ROW_KEYS and isinstance(inner, int):
                found["delivery_row"].add(inner)
            elif key in DELIVERY_ID_KEYS and isinstance(inner, str):
                found["delivery_id"].add(inner)
            else:
                _walk(inner, found)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, found)


def evidence_of(session: Session, alert_id: int) -> Evidence:
    """The alert and every item its evidence names (at most EVIDENCE_MAX of each kind)."""
    alert = get_alert(session, alert_id)
    found: dict[str, set[Any]] = {
        k: set() for k in ("posting", "notification", "transfer", "delivery_row", "delivery_id")
    }
    _walk(alert.evidence, found)
    view = Evidence(alert, {"notification": [], "posting": [], "transfer": []})
    for kind in ("notification", "posting", "transfer"):
        for item_id in sorted(found[kind])[:EVIDENCE_MAX]:
            try:
                view.items[kind].append(load_item(session, kind, item_id))
            except CandidateError as exc:  # the item is gone from the store: say so, go on
                view.missing.append(str(exc))
    rows: dict[int, Delivery] = {}
    wanted = sorted(found["delivery_row"])[:EVIDENCE_MAX]
    notified = [n.item_id for n in view.items["notification"]]
    if notified:
        pks = session.scalars(select(Notification.delivery_pk).where(Notification.id.in_(notified)))
        wanted.extend(pk for pk in pks if pk is not None)
    if wanted:
        for row in session.scalars(select(Delivery).where(Delivery.id.in_(wanted))):
            rows[row.id] = row
    if found["delivery_id"]:
        for row in session.scalars(
            select(Delivery)
            .where(Delivery.delivery_id.in_(sorted(found["delivery_id"])))
            .order_by(Delivery.id)
            .limit(EVIDENCE_MAX)
        ):
            rows[row.id] = row
    view.deliveries = [summarise(rows[k]) for k in sorted(rows)]
    return view
