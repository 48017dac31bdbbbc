"""Work in progress: schema changes for activity reading (provider variance); folded into 0001 before release.

`activity_cursors` learns where a position came from (`cursor_source`), keeps a newest-first
walk's state (`walk_top_posted_at`, `high_water_posted_at`) and what reads found out about the
provider's paging (`largest_page`, `page_size`, `oldest_first`). All nullable: an existing row
means "nothing found out yet", which is exactly what a reader starting on it should assume.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("cursor_source", sa.String(length=16)),
    ("walk_top_posted_at", sa.Text()),
    ("high_water_posted_at", sa.Text()),
    ("largest_page", sa.Integer()),
    ("page_size", sa.Integer()),
    ("oldest_first", sa.Boolean()),
)


def upgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        for name, kind in _COLUMNS:
            batch_op.add_column(sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("activity_cursors", schema=None) as batch_op:
        for name, _ in reversed(_COLUMNS):
            batch_op.drop_column(name)
