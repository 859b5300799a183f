"""Alembic migrations of the knowledge base's schema (see :mod:`triage.kb.migrate`).

``versions/NNNN_what.py`` is the migration to schema version NNNN; its
``revision`` is ``"NNNN"`` and its ``down_revision`` the previous number.
The highest number is the schema this triage writes.
"""
