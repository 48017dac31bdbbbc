"""After a prune: a plain VACUUM (ANALYZE) of every PostgreSQL table that lost rows.

A DELETE leaves dead row versions; their space is reused only once VACUUM has marked it free.
The autovacuum daemon does that in its own time, or never where it is turned off, and then a
table that loses as many rows as it gains still grows. So the prune vacuums each table it took
rows from, right away: a plain VACUUM (never FULL: that rewrites the table under an exclusive
lock) takes only a lock that lets reads and writes go on, and reads just the pages the
visibility map does not already know to be clean, which in an append-mostly table are the
ones this prune touched. ANALYZE refreshes the statistics the planner reads after a large
removal. VACUUM cannot run inside a transaction, so each runs on an autocommit connection.

The small tables every poll or pass rewrites in place (`REWRITTEN`: cursors, leases,
watermarks, the backlog, open alerts) are vacuumed each run too, whether or not it removed
rows: a few hundred rows rewritten every few seconds leave more dead versions than live ones,
and with the daemon off nothing else would ever free them. Each takes milliseconds.

SQLite reuses the free pages of its file by itself (the file does not shrink, nor grow again
until they are used), so nothing is run there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import Base

log = structlog.get_logger(__name__)

#: Small tables rewritten in place by every poll or pass (see the module docstring).
REWRITTEN: Final = (
    "activity_cursors",
    "alerts",
    "holdings",
    "leases",
    "match_backlog",
    "subscriptions",
    "watermarks",
)


@dataclass(slots=True)
class VacuumReport:
    """Which tables were vacuumed, and how long it took (those that could not be are logged)."""

    tables: list[str] = field(default_factory=list)
    seconds: float = 0.0


def vacuum_tables(factory: sessionmaker[Session], tables: Iterable[str]) -> VacuumReport:
    """VACUUM (ANALYZE) each named store table on PostgreSQL; nothing on SQLite.

    A table that cannot be vacuumed (a lock held by someone's long DDL, a lost connection) is
    reported and the others go on: the rows are already removed, and the next prune or the
    autovacuum daemon frees the space later.
    """
    report = VacuumReport()
    with factory() as session:
        bind = session.get_bind()
    if not isinstance(bind, Engine) or bind.dialect.name != "postgresql":
        return report
    known = sorted(t for t in set(tables) if t in Base.metadata.tables)
    if not known:
        return report
    started = time.perf_counter()
    quote = bind.dialect.identifier_preparer.quote
    with bind.connect() as connection:
        autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
        for table in known:
            try:
                autocommit.exec_driver_sql(f"VACUUM (ANALYZE) {quote(table)}")
                report.tables.append(table)
            except SQLAlchemyError as exc:
                log.warning("retention.vacuum_failed", table=table, error=type(exc).__name__)
    report.seconds = time.perf_counter() - started
    return report
