"""Bisect marks (#9), run deletions (#12), autopilot dispatches (#13), webhook
deliveries (#11) and stored evaluations (#10): five new tables."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _fk() -> sa.Column:
    return sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "bisectmark",
        sa.Column("pk", sa.Integer(), primary_key=True),
        _fk(),
        sa.Column("bisect_id", sa.String(), nullable=False),
        sa.Column("point", sa.String(), nullable=False),
        sa.Column("verdict", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("author", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_bisectmark_investigation_id", "bisectmark", ["investigation_id"])
    op.create_table(
        "rundeletion",
        sa.Column("pk", sa.Integer(), primary_key=True),
        _fk(),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("config", sa.String(), nullable=False),
        sa.Column("because", sa.String(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_rundeletion_investigation_id", "rundeletion", ["investigation_id"])
    op.create_table(
        "dispatch",
        sa.Column("pk", sa.Integer(), primary_key=True),
        _fk(),
        sa.Column("suggestion", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("point", sa.String(), nullable=True),
        sa.Column("workflow", sa.String(), nullable=False),
        sa.Column("ref", sa.String(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("evaluation", sa.String(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("url", sa.String(), nullable=True),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.Column("note", sa.String(), nullable=True),
    )
    op.create_index("ix_dispatch_investigation_id", "dispatch", ["investigation_id"])
    op.create_table(
        "delivery",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("event", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("installation_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.DateTime(), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("outcome", sa.String(), nullable=True),
    )
    op.create_index("ix_delivery_state_next", "delivery", ["state", "next_at"])
    op.create_table(
        "snapshot",
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), primary_key=True),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("data", sa.String(), nullable=False),
        sa.Column("others", sa.String(), nullable=True),
        sa.Column("similar", sa.String(), nullable=True),
    )


def downgrade() -> None:
    for index, table in (("ix_bisectmark_investigation_id", "bisectmark"),
                         ("ix_rundeletion_investigation_id", "rundeletion"),
                         ("ix_dispatch_investigation_id", "dispatch"), ("ix_delivery_state_next", "delivery")):
        op.drop_index(index, table)
    for table in ("snapshot", "delivery", "dispatch", "rundeletion", "bisectmark"):
        op.drop_table(table)
