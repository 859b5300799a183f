"""Several server replicas on one knowledge base (#27): a delivery is claimed
with a lease that expires -- the replica that holds it (``holder``) and until
when (``lease_until``), renewed while it works, cleared when it is settled.
``subject`` is what the delivery is about (``owner/name#N``, or
``owner/name`` when its payload names no one PR) and ``posting`` says that
its runs are recorded: a delivery for the same PR no longer leaves the
comment to it.  A delivery left ``running`` by an older server has no lease,
and is taken again by the next claim."""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

COLUMNS = ("holder", "lease_until", "subject", "posting")


def upgrade() -> None:
    op.add_column("delivery", sa.Column("holder", sa.String(), nullable=True))
    op.add_column("delivery", sa.Column("lease_until", sa.DateTime(), nullable=True))
    op.add_column("delivery", sa.Column("subject", sa.String(), nullable=True))
    op.add_column("delivery", sa.Column("posting", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index("ix_delivery_subject_state", "delivery", ["subject", "state"])


def downgrade() -> None:
    op.drop_index("ix_delivery_subject_state", "delivery")
    with op.batch_alter_table("delivery") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
