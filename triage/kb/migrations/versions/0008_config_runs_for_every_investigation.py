"""Every investigation's config numbers, and one index fewer on the run table (#10).

``configruns`` is filled for the investigations that have no rows in it yet
(those written before 0007 and not since), from their runs, as the writers
of runs work them out; from here on it holds every investigation's numbers.
The snapshot's fingerprint reads them there, so the (investigation,
updated_at) index, which only served that fingerprint's newest write, goes:
every run written updated it (some 8,000 instructions a run, an eighth of
an import's inserts)."""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_MILLIS = {
    "sqlite": "CAST(round((julianday(updated_at) - 2440587.5) * 86400000.0) AS INTEGER)",
    "postgresql": "round(extract(epoch from updated_at) * 1000)",
}


def upgrade() -> None:
    bind = op.get_bind()
    millis = _MILLIS.get(bind.dialect.name)
    if millis is not None:
        bind.execute(sa.text(
            "INSERT INTO configruns (investigation_id, config, first_pk, count, max_pk, max_updated, times) "
            f"SELECT investigation_id, config, min(pk), count(*), max(pk), max(updated_at), sum({millis}) FROM run "
            "WHERE investigation_id NOT IN (SELECT investigation_id FROM configruns) "
            "GROUP BY investigation_id, config"))
    op.drop_index("ix_run_investigation_updated", table_name="run")


def downgrade() -> None:
    op.create_index("ix_run_investigation_updated", "run", ["investigation_id", "updated_at"])
