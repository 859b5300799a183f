"""``/triage`` commands taken from PR comments: recorded once per comment, listed by ``triage history``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.kb.tables import models as m
from triage.kb.db import now


def comment_taken(s: Session, comment_id: int) -> bool:
    """Whether the commands of this comment were taken already (a redelivery, another hook)."""
    q = select(m.CommentCommand.pk).where(m.CommentCommand.comment_id == comment_id).limit(1)
    return s.execute(q).first() is not None


def record_commands(s: Session, iid: str, comment_id: int, author: str, url: str,
                    lines: list[tuple[str, str, str]]) -> None:
    """Record a comment's command lines, each ``(line, outcome, detail)``, in the order written.
    A second record of the same comment breaks the unique index (IntegrityError at the flush)."""
    at = now()
    for position, (line, outcome, detail) in enumerate(lines):
        s.add(m.CommentCommand(comment_id=comment_id, position=position, investigation_id=iid, author=author,
                               url=url, line=line, outcome=outcome, detail=detail, at=at))
    s.flush()


def commands_of(s: Session, iid: str) -> list[Any]:
    """An investigation's commands from comments, oldest first."""
    q = select(m.CommentCommand).where(m.CommentCommand.investigation_id == iid) \
        .order_by(m.CommentCommand.at, m.CommentCommand.comment_id, m.CommentCommand.position)
    return list(s.execute(q).scalars())
