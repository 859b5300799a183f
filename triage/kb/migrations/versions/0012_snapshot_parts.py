"""A stored view in parts (#31): its long lists, each a row of ``snapshotpart`` named by
the digest of its text, and the rest in ``snapshot.data``, which names them.  An add-run
whose view differs from the stored one in its headline and run count writes a small row,
not the whole view again.  The views stored whole are dropped: the next report builds
each one again from the stored pieces."""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "snapshotpart",
        sa.Column("investigation_id", sa.String(), sa.ForeignKey("investigation.id"), primary_key=True),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("digest", sa.String(), nullable=False),
        sa.Column("data", sa.String(), nullable=False),
    )
    op.execute(sa.text("DELETE FROM snapshot"))


def downgrade() -> None:
    op.drop_table("snapshotpart")
    op.execute(sa.text("DELETE FROM snapshot"))
