"""A knowledge base taken back to an older schema version by its migrations' own downgrades."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine

from triage.kb import migrate


def downgrade(url: str, version: int) -> None:
    """Run the downgrades from the knowledge base's version back to ``version``, and say so in ``meta``."""
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(migrate.VERSIONS.parent))
    script = ScriptDirectory.from_config(cfg)
    target = f"{version:04d}"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            current = migrate.read_status(conn).version
            assert current is not None and current >= version, current

            def steps(rev: Any, _context: Any) -> Any:
                return script._downgrade_revs(target, rev)

            with EnvironmentContext(cfg, script, fn=steps, destination_rev=target) as env:
                env.configure(connection=conn, transaction_per_migration=False)
                env.get_context().stamp(script, f"{current:04d}")
                env.run_migrations()
            migrate._set_version(conn, version)
    finally:
        engine.dispose()
