"""Work in progress: schema changes for retention and flat periodic cost; folded into 0001 before release.

- `activity_cursors`: the index on `next_poll_at` goes (every poll rewrites the column, so no
  update could be done in place and each left a dead row version and index entry behind; the
  table is one row per holding and the claim reads it whole cheaply) and, on PostgreSQL, pages
  are filled to half, leaving room for in-place (HOT) updates.
- `transfers`: the poll-due index holds only transfers still polled (partial on
  `NOT is_terminal`, the form PostgreSQL reduces `is_terminal = false` to; queries must say
  `= false`, since `IS false` does not prove the predicate), so the claim's cost follows the
  transfers in flight, not the history; a `terminal_at` index lets retention compact
  histories in order.
- `outbound_requests`: a `completed_at` index lets retention find closed keys by age.

On PostgreSQL the indexes of the big tables are built CONCURRENTLY, outside the migration's
transaction, so an upgrade does not block the receiver and the pollers while they build.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_activity_cursors_next_poll_at"))
    if _postgres():
        op.execute("ALTER TABLE activity_cursors SET (fillfactor = 50)")
        with op.get_context().autocommit_block():
            op.drop_index("ix_transfers_poll_due", "transfers", postgresql_concurrently=True)
            op.create_index(
                "ix_transfers_poll_due",
                "transfers",
                ["next_poll_at"],
                postgresql_where=sa.text("NOT is_terminal"),
                postgresql_concurrently=True,
            )
            op.create_index(
                "ix_transfers_terminal_at",
                "transfers",
                ["terminal_at"],
                postgresql_concurrently=True,
            )
            op.create_index(
                "ix_outbound_requests_completed_at",
                "outbound_requests",
                ["completed_at"],
                postgresql_concurrently=True,
            )
        return
    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index("ix_transfers_poll_due")
        batch_op.create_index(
            "ix_transfers_poll_due", ["next_poll_at"], sqlite_where=sa.text("is_terminal = 0")
        )
        batch_op.create_index("ix_transfers_terminal_at", ["terminal_at"])
    with op.batch_alter_table("outbound_requests", schema=None) as batch_op:
        batch_op.create_index("ix_outbound_requests_completed_at", ["completed_at"])


def downgrade() -> None:
    with op.batch_alter_table("outbound_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_outbound_requests_completed_at")
    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index("ix_transfers_terminal_at")
        batch_op.drop_index("ix_transfers_poll_due")
        batch_op.create_index("ix_transfers_poll_due", ["is_terminal", "next_poll_at"])
    if _postgres():
        op.execute("ALTER TABLE activity_cursors RESET (fillfactor)")
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_activity_cursors_next_poll_at"), ["next_poll_at"], unique=False
        )
