"""Every kind of CI failure (#25): a run's status is its outcome -- passed,
failed, timeout, oom, crashed, cancelled, infra.  ``error``, the one word the
older statuses had for every run that did not finish (a runner lost, a setup
that failed, a job that timed out), is ``infra`` now: the runs keep their
note, signature and numbers, and read the same (no result, unless an
investigation declares ``infra`` its failure).

The number also keeps an older triage, which would read a ``timeout`` or an
``oom`` run as a valid result, from opening a knowledge base that holds one.

The stored evaluations (pieces and snapshots) name the old word: they are
derived, and dropped; the next command evaluates each investigation whole once.
A downgrade says ``error`` again for every outcome the older statuses lack."""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _drop_evaluations() -> None:
    op.execute(sa.text("DELETE FROM evaluationpiece"))
    op.execute(sa.text("DELETE FROM snapshot"))


def upgrade() -> None:
    op.execute(sa.text("UPDATE run SET status = 'infra' WHERE status = 'error'"))
    _drop_evaluations()


def downgrade() -> None:
    op.execute(sa.text("UPDATE run SET status = 'error' WHERE status IN ('infra', 'timeout', 'oom')"))
    _drop_evaluations()
