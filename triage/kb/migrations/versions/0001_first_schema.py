"""The first schema (version 1): the baseline every later migration starts from.

Knowledge bases at version 1 were created by SQLModel's ``create_all``; this
revision only names that state, so it changes nothing.
"""

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
