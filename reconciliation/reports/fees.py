"""Fees as a figure of their own: per holding and unit, by kind and bearer, for the window.

A fee is counted once its transfer settled (terminal and successful): a transfer still in
flight may yet be charged another fee (the spec says created totals can differ from quoted
ones), and one that failed or was denied charged nothing. It is counted on the transfer's
source holding, the holding the report lists the transfer under, with its bearer beside it
(so a receiver_pays fee shows as the receiver's, on the sender's transfer). A transfer whose
fee recon could not read is counted as unknown, not as 0.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import case, func, select, true
from sqlalchemy.orm import Session

from reconciliation.reports.filters import UNKNOWN_HOLDING, for_holding, in_window
from reconciliation.reports.model import FeeTotal, ReportWindow
from reconciliation.store.tables import holdings, transfers
from reconciliation.store.types import amount_sum

#: Said for a fee whose elements name no kind, and one with no bearer recon knows.
UNNAMED_KIND: Final = "unnamed"
UNKNOWN_BEARER: Final = "unknown"


def fee_figures(session: Session, window: ReportWindow, holding_id: int | None) -> list[FeeTotal]:
    """Fees of the window's settled transfers, grouped by holding, unit, kind and bearer."""
    t, h = transfers, holdings
    asked = func.coalesce(t.c.requested_at, t.c.created_at)
    unknown = t.c.fee_charged_minor.is_(None)
    kind = func.coalesce(t.c.fee_kind, UNNAMED_KIND)
    bearer = func.coalesce(t.c.fee_bearer, UNKNOWN_BEARER)
    query = (
        select(
            t.c.source_holding_ref,
            t.c.currency,
            kind,
            bearer,
            func.count(),
            amount_sum(t.c.fee_charged_minor),
            func.sum(case((unknown, 1), else_=0)),
        )
        .select_from(t.outerjoin(h, h.c.holding_ref == t.c.source_holding_ref))
        .where(
            t.c.is_terminal == true(),
            t.c.is_successful == true(),
            # A fee stated and not nothing, or one whose elements could not be read.
            (t.c.fee_charged_minor != 0) | (unknown & t.c.fee_evidence.is_not(None)),
            in_window(asked, window),
            for_holding(h.c.id, holding_id),
        )
        .group_by(t.c.source_holding_ref, t.c.currency, kind, bearer)
    )
    found = [
        FeeTotal(
            holding_ref=str(ref) if ref is not None else UNKNOWN_HOLDING,
            currency=currency or "?",
            kind=str(fee_kind),
            bearer=str(who),
            count=int(count),
            amount_minor=int(total or 0),
            unknown_count=int(unread or 0),
        )
        for ref, currency, fee_kind, who, count, total, unread in session.execute(query)
    ]
    return sorted(found, key=lambda f: (f.currency, f.holding_ref, f.kind, f.bearer))
