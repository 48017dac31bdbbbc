"""The store: models, sessions, portable write statements, watermarks and typed table handles.

What the processes use (sessions, the models they read, `utcnow`) is named here; the rest of
`reconciliation` reaches its modules directly, since a store module is below everything else.
"""

from reconciliation.store.db import (
    StoreMissingError,
    make_engine,
    make_session_factory,
    transaction,
)
from reconciliation.store.models import (
    Alert,
    BalanceCheck,
    Base,
    Delivery,
    Lease,
    Notification,
    Subscription,
    Transfer,
)
from reconciliation.store.types import utcnow
from reconciliation.store.write_statements import insert_ignoring_conflicts, rows_touched

__all__ = [
    "Alert",
    "BalanceCheck",
    "Base",
    "Delivery",
    "Lease",
    "Notification",
    "StoreMissingError",
    "Subscription",
    "Transfer",
    "insert_ignoring_conflicts",
    "make_engine",
    "make_session_factory",
    "rows_touched",
    "transaction",
    "utcnow",
]
