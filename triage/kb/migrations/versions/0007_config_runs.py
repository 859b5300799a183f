"""Each config's runs in numbers (#10): count, first and largest key, newest
write and the sum of write times, kept by every writer of runs, so that an
evaluation tells which configs changed without reading an index entry per
run. Empty at first: an investigation's rows are worked out on its next write
of runs, and read from the runs until then."""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "configruns",
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), primary_key=True),
        sa.Column("config", sa.String(), primary_key=True),
        sa.Column("first_pk", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("max_pk", sa.Integer(), nullable=False),
        sa.Column("max_updated", sa.DateTime(), nullable=False),
        sa.Column("times", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("configruns")
