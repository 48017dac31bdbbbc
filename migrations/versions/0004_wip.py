"""Work in progress: schema changes for transfers (provider variance); folded into 0001 before release.

`transfer_intents`: a transfer recon asks for is recorded before the request goes out (the
gateway names it only in its answer), then its outcome.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import reconciliation.store.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    moment = reconciliation.store.types.UTCDateTime(timezone=True)
    op.create_table(
        "transfer_intents",
        sa.Column("id", big_id, nullable=False),
        sa.Column("idempotency_key", sa.Uuid(), nullable=False),
        sa.Column("client_key", sa.Uuid(), nullable=True),
        sa.Column("requested_via", sa.String(length=16), nullable=False),
        sa.Column("source_account_ref", sa.Uuid(), nullable=False),
        sa.Column("source_endpoint_ref", sa.Uuid(), nullable=False),
        sa.Column("source_holding_ref", sa.Uuid(), nullable=False),
        sa.Column("dest_account_ref", sa.Uuid(), nullable=False),
        sa.Column("dest_endpoint_ref", sa.Uuid(), nullable=False),
        sa.Column("dest_holding_ref", sa.Uuid(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("amount_minor", sa.BigInteger(), nullable=False),
        sa.Column("material_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("transfer_ref", sa.Uuid(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", moment, nullable=False),
        sa.Column("answered_at", moment, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfer_intents")),
        sa.UniqueConstraint("client_key", name=op.f("uq_transfer_intents_client_key")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_transfer_intents_idempotency_key")),
    )
    with op.batch_alter_table("transfer_intents", schema=None) as batch_op:
        batch_op.create_index("ix_transfer_intents_outcome_id", ["outcome", "id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_transfer_intents_transfer_ref"), ["transfer_ref"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("transfer_intents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_transfer_intents_transfer_ref"))
        batch_op.drop_index("ix_transfer_intents_outcome_id")
    op.drop_table("transfer_intents")
