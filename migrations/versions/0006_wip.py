"""Work in progress: schema changes for audit and rebuild; folded into 0001 before release.

Adds `audit_runs`: one row per audit of the stored postings against the gateway's activity.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import reconciliation.store.types

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    moment = reconciliation.store.types.UTCDateTime(timezone=True)
    op.create_table(
        "audit_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", moment, nullable=False),
        sa.Column("finished_at", moment, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("holding_ref", sa.Uuid(), nullable=True),
        sa.Column("since", moment, nullable=True),
        sa.Column("holdings", sa.Integer(), nullable=False),
        sa.Column("postings", sa.BigInteger(), nullable=False),
        sa.Column("divergences", sa.BigInteger(), nullable=False),
        sa.Column("missing", sa.BigInteger(), nullable=False),
        sa.Column("unknown", sa.BigInteger(), nullable=False),
        sa.Column("differing", sa.BigInteger(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_runs")),
    )
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.create_index("ix_audit_runs_finished", ["finished_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_runs_finished")
    op.drop_table("audit_runs")
