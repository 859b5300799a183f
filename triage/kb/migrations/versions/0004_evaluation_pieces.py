"""Stored evaluation pieces (#10): incremental evaluation keeps each piece of an
investigation's evaluation with what it read; an index gives each config's
runs' fingerprint without reading the runs, another the newest runs."""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evaluationpiece",
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), primary_key=True),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("reads", sa.String(), nullable=False),
        sa.Column("data", sa.String(), nullable=False),
    )
    op.create_index("ix_run_investigation_config_updated", "run", ["investigation_id", "config", "updated_at"])
    op.create_index("ix_run_investigation_time", "run", ["investigation_id", "time"])


def downgrade() -> None:
    op.drop_index("ix_run_investigation_time", table_name="run")
    op.drop_index("ix_run_investigation_config_updated", table_name="run")
    op.drop_table("evaluationpiece")
