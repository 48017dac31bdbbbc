"""Work in progress: schema changes for delivery payloads (provider variance); folded into 0001 before release.

Deliveries remember which shape problem (alert fingerprint) kept them quarantined, so a replay
that reads them can resolve the alert; notifications keep the body's own id as evidence (the
delivery id is the webhook-id header) and the payload shape that read them.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("shape_problem", sa.String(length=128), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_deliveries_shape_problem"), ["shape_problem"], unique=False
        )
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("body_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("payload_shape", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_column("payload_shape")
        batch_op.drop_column("body_id")
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deliveries_shape_problem"))
        batch_op.drop_column("shape_problem")
