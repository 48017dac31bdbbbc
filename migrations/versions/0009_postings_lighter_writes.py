"""postings_lighter_writes: a posting costs the catch-up two index entries and a foreign-key check
fewer. The holding foreign key goes (a posting is written only with its holding's leased cursor
row, which references the holding, and holdings are never deleted: docs/decisions.md, "The
postings' holding without a foreign key"), and the (match_status, id) index becomes an index of
the exceptions' ids, the only postings its readers look for. SQLite copies the table (batch
mode); PostgreSQL drops the key in place and builds the new index from the few exceptions.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 08:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The one status the partial index keeps (reconciliation.store.models.base.EXCEPTION, spelled
#: out: a migration must not change when the code's constants do).
_EXCEPTIONS = "match_status = 'exception'"


def upgrade() -> None:
    with op.batch_alter_table("postings", schema=None) as batch_op:
        batch_op.drop_constraint("fk_postings_holding_id_holdings", type_="foreignkey")
        batch_op.drop_index("ix_postings_match_status_id")
        batch_op.create_index(
            "ix_postings_exception_id",
            ["id"],
            unique=False,
            postgresql_where=sa.text(_EXCEPTIONS),
            sqlite_where=sa.text(_EXCEPTIONS),
        )


def downgrade() -> None:
    with op.batch_alter_table("postings", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_postings_exception_id",
            postgresql_where=sa.text(_EXCEPTIONS),
            sqlite_where=sa.text(_EXCEPTIONS),
        )
        batch_op.create_index("ix_postings_match_status_id", ["match_status", "id"], unique=False)
        batch_op.create_foreign_key(
            "fk_postings_holding_id_holdings", "holdings", ["holding_id"], ["id"]
        )
