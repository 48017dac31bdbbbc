"""delivery_body_conflict: one delivery id arrived twice with different bodies.

A provider retries with the same id and the same bytes; the same id with other bytes means the
event was changed after it was sent, or someone is replaying ids. The inbox raises this the
moment it stores the second body (reconciliation.notifications.inbox, same kind and fingerprint); this rule
re-checks the inbox set-wise for deliveries stored since the last pass, so a conflict stored by
any path is never missed. It never resolves by itself: a conflict that happened stays a fact
until a person marks which body is true (`recon deliveries choose`), which resolves it; a body
they rejected is not a conflict any more, so a full pass does not raise it again.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from sqlalchemy import exists, select

from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext
from reconciliation.drift.evidence import as_evidence
from reconciliation.notifications.inbox import (
    BODY_CONFLICT_ALERT,
    REJECTED,
    body_conflict_fingerprint,
    body_conflict_subject,
)
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import Alert
from reconciliation.store.tables import deliveries

KIND: Final = BODY_CONFLICT_ALERT
SEVERITY: Final = "high"


class DeliveryBodyConflict:
    kinds = (KIND,)

    def assess(self, ctx: DriftContext) -> Assessment:
        d, s = deliveries, ctx.session
        other = deliveries.alias("other")
        # One statement: a fresh delivery whose id is stored with another body. The probe is
        # the unique (delivery_id, body_sha256) index, so a pass with a few fresh rows costs a
        # few probes, and a full pass one semi-join instead of a query per 500 ids.
        conflicted = sorted(
            s.scalars(
                select(d.c.delivery_id)
                .where(
                    d.c.id > ctx.deliveries_checked,
                    d.c.id <= ctx.deliveries_top,
                    d.c.state != REJECTED,
                    exists().where(
                        other.c.delivery_id == d.c.delivery_id,
                        other.c.body_sha256 != d.c.body_sha256,
                        other.c.state != REJECTED,
                    ),
                )
                .distinct()
            )
        )
        bodies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        fields = {
            "deliveryPk": d.c.id,
            "bodySha256": d.c.body_sha256,
            "receivedAt": d.c.received_at,
            "state": d.c.state,
        }
        for batch in chunks(conflicted):
            query = select(d.c.delivery_id, *fields.values()).where(d.c.delivery_id.in_(batch))
            for delivery_id, *body in s.execute(query.order_by(d.c.id)):
                bodies[delivery_id].append(as_evidence(fields, body))
        found = []
        for delivery_id, seen in sorted(bodies.items()):
            fp = body_conflict_fingerprint(delivery_id)
            known = s.scalars(select(Alert).where(Alert.fingerprint == fp)).first()
            # Raised by the inbox with its own evidence: refresh it, do not rewrite it.
            found.append(
                Finding.of(known)
                if known is not None
                else Finding(
                    KIND,
                    SEVERITY,
                    body_conflict_subject(delivery_id),
                    fp,
                    {"deliveryId": delivery_id, "bodies": seen},
                )
            )
        return Assessment(kinds=self.kinds, findings=found, clears=False)
