"""`/triage` commands in PR comments (#27): each command the server took, with
its author, the comment's URL and what came of it; a comment id with a
line's place in it is unique, so a comment is acted on once."""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "commentcommand",
        sa.Column("pk", sa.Integer(), primary_key=True),
        sa.Column("comment_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), nullable=False),
        sa.Column("author", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("line", sa.String(), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("detail", sa.String(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_commentcommand_comment", "commentcommand", ["comment_id", "position"], unique=True)
    op.create_index("ix_commentcommand_investigation_id", "commentcommand", ["investigation_id"])


def downgrade() -> None:
    op.drop_table("commentcommand")
