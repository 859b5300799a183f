"""One index over a config's runs (#10): (investigation, config, updated_at) serves
everything (investigation, config) did, its prefix; the second index only slowed
every write of a run (an import of 100,000 records: 0.3 s of its inserts)."""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_run_investigation_config", table_name="run")


def downgrade() -> None:
    op.create_index("ix_run_investigation_config", "run", ["investigation_id", "config"])
