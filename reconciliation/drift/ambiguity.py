"""ambiguous_match: matching found several equally good counterparts and refused to guess.

Raised from what this pass's matching reported; one alert per anchor item (the posting with two
notifications, the notification with two candidate postings), its evidence naming every rival
so a person can decide with `recon match`. Clears when the anchor is no longer an exception
(a person matched it, or released it back to automatic matching).
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import select

from reconciliation.alerts.lifecycle import ACTIVE_STATES, Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import describe, natural_key
from reconciliation.matching.status import ITEM_TABLES
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import EXCEPTION, Alert

KIND: Final = "ambiguous_match"
SEVERITY: Final = "medium"


class AmbiguousMatch(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        found: dict[str, Finding] = {}
        items = {a.anchor for a in ctx.ambiguities}
        items |= {r for a in ctx.ambiguities for r in a.rivals}
        evidence = describe(ctx.session, items)
        for ambiguity in ctx.ambiguities:
            kind, _ = ambiguity.anchor
            anchor = evidence[ambiguity.anchor]
            rivals = [evidence[r] for r in ambiguity.rivals]
            rival_kind = ambiguity.rivals[0][0] if ambiguity.rivals else "item"
            finding = self.finding(
                f"{kind} {natural_key(kind, anchor)} has {len(rivals)} candidate "
                f"{rival_kind}s by rule {ambiguity.rule}; a person must choose (recon match)",
                (kind, natural_key(kind, anchor)),
                {
                    "rule": ambiguity.rule,
                    "anchorKind": kind,
                    "anchorId": ambiguity.anchor[1],
                    "anchor": anchor,
                    "rivalKind": rival_kind,
                    "rivals": rivals,
                },
            )
            found[finding.fingerprint] = finding
        for alert in self._still_exceptions(ctx):
            found.setdefault(alert.fingerprint, Finding.of(alert))
        return list(found.values())

    def _still_exceptions(self, ctx: DriftContext) -> list[Alert]:
        active = select(Alert).where(Alert.kind == KIND, Alert.state.in_(ACTIVE_STATES))
        by_kind: dict[str, dict[int, Alert]] = {}
        for alert in ctx.session.scalars(active):
            ev: dict[str, Any] = alert.evidence or {}
            if ev.get("anchorKind") in ITEM_TABLES and isinstance(ev.get("anchorId"), int):
                by_kind.setdefault(ev["anchorKind"], {})[ev["anchorId"]] = alert
        still: list[Alert] = []
        for kind, alerts in by_kind.items():
            table, _ = ITEM_TABLES[kind]
            for batch in chunks(sorted(alerts)):
                query = select(table.c.id).where(
                    table.c.id.in_(batch), table.c.match_status == EXCEPTION
                )
                still += [alerts[int(i)] for i in ctx.session.scalars(query)]
        return still
