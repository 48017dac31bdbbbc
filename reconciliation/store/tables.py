"""The store's tables as typed `Table` handles, for Core statements: declared here, once.

SQLAlchemy's stubs type a mapped class's `__table__` as a `FromClause`; a declarative model's is
always the `Table` its columns were declared into, and saying so once here spares every module
that writes Core SQL its own cast.
"""

from __future__ import annotations

from typing import Final, cast

from sqlalchemy import Table

from reconciliation.store.models import (
    ActivityCursor,
    Alert,
    BalanceCheck,
    BalanceSnapshot,
    Delivery,
    Holding,
    Locator,
    Match,
    MatchBacklog,
    Notification,
    OutboundRequest,
    Posting,
    Transfer,
    TransferChange,
    TransferFeeReceipt,
    TransferIntent,
)

activity_cursors: Final = cast(Table, ActivityCursor.__table__)
alerts: Final = cast(Table, Alert.__table__)
balance_checks: Final = cast(Table, BalanceCheck.__table__)
balance_snapshots: Final = cast(Table, BalanceSnapshot.__table__)
deliveries: Final = cast(Table, Delivery.__table__)
holdings: Final = cast(Table, Holding.__table__)
locators: Final = cast(Table, Locator.__table__)
match_backlog: Final = cast(Table, MatchBacklog.__table__)
matches: Final = cast(Table, Match.__table__)
notifications: Final = cast(Table, Notification.__table__)
outbound_requests: Final = cast(Table, OutboundRequest.__table__)
postings: Final = cast(Table, Posting.__table__)
transfer_changes: Final = cast(Table, TransferChange.__table__)
transfer_fee_receipts: Final = cast(Table, TransferFeeReceipt.__table__)
transfer_intents: Final = cast(Table, TransferIntent.__table__)
transfers: Final = cast(Table, Transfer.__table__)
