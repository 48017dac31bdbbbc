"""cursor_changes: each activity cursor says when it last changed, by the database's clock.

The balance rule used to keep every holding whose newest snapshot its poller had not read past
yet in view, pass after pass; with snapshots taken after each read, that was nearly every
holding. A read released past a snapshot changes the cursor row, so the rule now looks at the
rows changed since its previous read instead, from this column's index. Existing rows start
unmarked (NULL): the rule's first pass after the upgrade still has them in view from before.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29 13:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.add_column(sa.Column("changed_ms", sa.BigInteger(), nullable=True))
        batch_op.create_index("ix_activity_cursors_changed", ["changed_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.drop_index("ix_activity_cursors_changed")
        batch_op.drop_column("changed_ms")
