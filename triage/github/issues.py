"""What the ``/triage`` commands need from GitHub besides the sticky comment:
who may act (a collaborator's permission), reactions on a comment, and a reply.

* ``GET /repos/{owner}/{repo}/collaborators/{username}/permission`` answers
  ``{"permission": "admin"|"write"|"read"|"none", "role_name": …, "user": …}``;
  ``permission`` is the legacy base role (``maintain`` counts as ``write``,
  ``triage`` as ``read``), ``role_name`` the role itself.  A 404 (not a
  collaborator) is no permission.
* ``POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions`` with
  ``{"content": "eyes"|"+1"|"confused"|…}``: 201 created, 200 when the same
  reaction was there already (so a repeat is harmless).
* ``POST /repos/{owner}/{repo}/issues/{number}/comments`` with ``{"body": …}``:
  a reply, sent once (no retry that could post it twice).
"""

from __future__ import annotations

from typing import Optional
from urllib.parse import quote

from .client import GitHubClient, GitHubNotFound

__all__ = ["ACTING_ROLES", "may_act", "permission", "react", "reply"]

#: The roles that may act: write access or more (custom roles count by their base role).
ACTING_ROLES = frozenset({"admin", "maintain", "write"})
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


def permission(client: GitHubClient, repo: str, login: str) -> tuple[str, Optional[str]]:
    """The user's base permission on ``repo`` and role name (``("none", None)``: not a collaborator)."""
    try:
        data = client.get_json(f"/repos/{repo}/collaborators/{quote(login, safe='')}/permission")
    except GitHubNotFound:
        return "none", None
    if not isinstance(data, dict):
        return "none", None
    role = data.get("role_name")
    return str(data.get("permission") or "none"), (str(role) if isinstance(role, str) else None)


def may_act(base: str, role: Optional[str]) -> bool:
    """Whether a permission lets its holder act: write, maintain or admin."""
    return base in ACTING_ROLES or (role or "") in ACTING_ROLES


def react(client: GitHubClient, repo: str, comment_id: int, content: str) -> None:
    """Add our reaction ``content`` to an issue or PR comment."""
    if content not in REACTIONS:
        raise ValueError(f"not a GitHub reaction: {content!r}")
    client.request("POST", f"/repos/{repo}/issues/comments/{int(comment_id)}/reactions", json={"content": content})


def reply(client: GitHubClient, repo: str, number: int, body: str) -> Optional[str]:
    """Post a comment on ``repo#number`` once; its URL."""
    resp = client.request("POST", f"/repos/{repo}/issues/{int(number)}/comments", json={"body": body}, retry=False)
    data = client.json(resp)
    return data.get("html_url") if isinstance(data, dict) else None
