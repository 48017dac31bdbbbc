"""Named integers in the store that remember how far incremental work has got."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from sqlalchemy.orm import Session

from reconciliation.store.models import Watermark

#: The pass's mark: every match row at or below it has been through the drift rules. The pass
#: (reconciliation.reconcile) moves it; retention prunes only matches at or below it.
MATCHES_CHECKED: Final = "reconcile.matches_checked"


def read(session: Session, name: str, default: int = 0) -> int:
    mark = session.get(Watermark, name)
    return default if mark is None else int(mark.value)


def write(session: Session, name: str, value: int, now: datetime) -> None:
    mark = session.get(Watermark, name)
    if mark is None:
        session.add(Watermark(name=name, value=value, updated_at=now))
    else:
        mark.value = value
        mark.updated_at = now


def to_millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_millis(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, tz=UTC)
