"""delivery_not_understood: deliveries no configured payload shape reads, one alert per gap.

The provider's delivery shape is "not shown" in its spec, so a shape recon does not know yet is
an expected event, not a crash: each such delivery is quarantined with its bytes, and the alert
names the shape the body came closest to and exactly which fields that shape missed. Every
delivery with the same gap (same closest shape, same missing and invalid fields, whatever their
values) shares one alert, by fingerprint, so a provider sending a new shape raises one alert,
not one per payment.

The fingerprint is kept on each quarantined row (`deliveries.shape_problem`). Once recon learns
the shape (RECON_PAYLOAD_SHAPES / RECON_PAYLOAD_FIELD_MAP) and the rows are replayed
(`recon deliveries replay --quarantined`), each row read clears its mark, and the alert
resolves itself when no row carries it any more.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import (
    AUTO_RESOLVER,
    RESOLVED,
    fingerprint,
    raise_alert,
    resolve_alert,
)
from reconciliation.store.models import Alert, Delivery
from upstream import DeliveryNotUnderstood

KIND: Final = "delivery_not_understood"
#: High: until the shape is learned, every claim of this shape is invisible to matching, so
#: every posting it covers looks unannounced.
SEVERITY: Final = "high"
#: Row ids an alert lists as examples (the count covers the rest).
SAMPLE_ROWS: Final = 20
#: What a person does about it, said in the alert itself.
REMEDY: Final = (
    "describe the shape with RECON_PAYLOAD_FIELD_MAP (or enable a built-in one with "
    "RECON_PAYLOAD_SHAPES; for an event type without status, give its outcome in "
    "RECON_EVENT_OUTCOMES), restart the workers, then run `recon deliveries replay --quarantined`"
)


def shape_problem_fingerprint(result: DeliveryNotUnderstood) -> str:
    """One condition per closest shape and set of gaps; the values never enter it."""
    return fingerprint(KIND, *result.signature())


@dataclass(slots=True)
class ShapeProblem:
    """The deliveries of one batch that share a gap, and what it is."""

    result: DeliveryNotUnderstood
    row_ids: list[int] = field(default_factory=list)


def raise_shape_alerts(
    session: Session, problems: dict[str, ShapeProblem], shapes: tuple[str, ...], now: datetime
) -> list[int]:
    """Open or refresh one alert per gap seen in this batch; returns the alert ids.

    Call after the rows are marked with their fingerprint (and flushed): the count in the alert
    is of every row in the store that still carries it, not only this batch's.
    """
    alert_ids = []
    for fp, problem in sorted(problems.items()):
        rows = sorted(session.scalars(select(Delivery.id).where(Delivery.shape_problem == fp)))
        closest = problem.result.closest
        alert = raise_alert(
            session,
            kind=KIND,
            severity=SEVERITY,
            subject=(
                f"{len(rows)} webhook deliveries quarantined: no payload shape recon knows "
                f"reads them (nearest {closest.shape!r}, missing "
                f"{', '.join(closest.missing) or 'nothing'}; invalid "
                f"{', '.join(closest.invalid) or 'nothing'})"
            ),
            fingerprint=fp,
            evidence={
                "closestShape": closest.shape,
                "missing": list(closest.missing),
                "invalid": list(closest.invalid),
                "problems": [p.describe() for p in closest.problems],
                "tried": {
                    t.shape: [p.describe() for p in t.problems] for t in problem.result.tried
                },
                "shapesConfigured": list(shapes),
                "topLevelMembers": list(problem.result.top_level),
                "deliveries": len(rows),
                "sampleRowIds": rows[:SAMPLE_ROWS],
                "whatToDo": REMEDY,
            },
            now=now,
        )
        alert_ids.append(alert.id)
    return alert_ids


def resolve_cleared(session: Session, fingerprints: Iterable[str]) -> list[int]:
    """Resolve the alert of each gap no delivery carries any more; returns the alert ids."""
    resolved = []
    for fp in sorted(set(fingerprints)):
        left = session.scalar(
            select(func.count()).select_from(Delivery).where(Delivery.shape_problem == fp)
        )
        if left:
            continue
        alert = session.scalars(select(Alert).where(Alert.fingerprint == fp)).one_or_none()
        if alert is None or alert.state == RESOLVED:
            continue
        resolve_alert(
            session,
            alert.id,
            by=AUTO_RESOLVER,
            note="every delivery with this shape problem was read after a replay",
        )
        resolved.append(alert.id)
    return resolved
