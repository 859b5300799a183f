"""Evaluation pieces' data as msgpack (#10): texts as they are, read back four
times faster than JSON, which escaped the separator between each two of the
thousands of runs a piece names. The pieces are derived: the table is made
again empty, and the next command evaluates each investigation whole once."""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _table(data: sa.types.TypeEngine) -> None:
    op.create_table(
        "evaluationpiece",
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), primary_key=True),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("reads", sa.String(), nullable=False),
        sa.Column("data", data, nullable=False),
    )


def upgrade() -> None:
    op.drop_table("evaluationpiece")
    _table(sa.LargeBinary())


def downgrade() -> None:
    op.drop_table("evaluationpiece")
    _table(sa.String())
