"""A fresh PostgreSQL database per use, on the server TRIAGE_TEST_PG names."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager

import pytest


ADMIN_URL = os.environ.get("TRIAGE_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@contextmanager
def database():
    """A new, empty database on the server; dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    from sqlalchemy.engine import make_url

    admin = make_url(ADMIN_URL)
    conninfo = dict(host=admin.host, port=admin.port or 5432, user=admin.username, dbname=admin.database,
                    password=admin.password, connect_timeout=5)
    try:
        con = psycopg.connect(**{k: v for k, v in conninfo.items() if v is not None}, autocommit=True)
    except psycopg.OperationalError as e:
        if os.environ.get("TRIAGE_REQUIRE_PG"):
            pytest.fail(f"PostgreSQL is required but unreachable: {e}")
        pytest.skip(f"PostgreSQL not reachable at {admin.host}:{admin.port}: {e}")
    name = f"triage_test_{uuid.uuid4().hex[:10]}"
    con.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        import gc

        from triage.kb.db import _engines

        for url in [u for u in _engines if name in u]:
            _engines.pop(url).dispose()
        # A connection a test left checked out is returned by its finalizer: let that run now,
        # while its database is there, not later inside whatever code a collection interrupts
        # (a finalizer run inside ast.parse breaks CPython 3.11's recursion accounting).
        gc.collect()
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.close()
