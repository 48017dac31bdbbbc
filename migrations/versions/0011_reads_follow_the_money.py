"""reads_follow_the_money: activity reads are chosen by priority and due time from an index.

A notification or a terminal transfer makes its holdings' reads due at once (priority 0), a
catch-up comes next (1), silent holdings back off up to the staleness ceiling (2); each tick
reads the due slice from (due_priority, next_poll_at), and balance snapshots from
balance_due_at, instead of looking at every holding. Rows without a due time (an older
version's) become due now, so the index finds them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29 07:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations import frozen_types

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    moment = frozen_types.UTCDateTime(timezone=True)
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("due_priority", sa.SmallInteger(), server_default="2", nullable=False)
        )
        batch_op.add_column(sa.Column("signalled_at", moment, nullable=True))
        batch_op.add_column(
            sa.Column("quiet_reads", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("balance_due_at", moment, nullable=True))
        batch_op.create_index(
            "ix_activity_cursors_due", ["due_priority", "next_poll_at"], unique=False
        )
        batch_op.create_index(
            "ix_activity_cursors_balance_due", ["balance_due_at"], unique=False
        )
    op.execute("UPDATE activity_cursors SET next_poll_at = CURRENT_TIMESTAMP WHERE next_poll_at IS NULL")


def downgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.drop_index("ix_activity_cursors_balance_due")
        batch_op.drop_index("ix_activity_cursors_due")
        batch_op.drop_column("balance_due_at")
        batch_op.drop_column("quiet_reads")
        batch_op.drop_column("signalled_at")
        batch_op.drop_column("due_priority")
