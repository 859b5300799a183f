"""Who the server is on GitHub: a GitHub App, or a plain token.

As a GitHub App (``TRIAGE_APP_ID`` and ``TRIAGE_APP_PRIVATE_KEY``, the PEM
text, or ``TRIAGE_APP_PRIVATE_KEY_FILE``): a JWT signed RS256 with the App's
private key (issued a minute in the past, valid nine minutes, as GitHub
allows at most ten) is exchanged for an installation token
(``POST /app/installations/{id}/access_tokens``), which is cached and
replaced five minutes before it expires.  The installation is the
delivery's (``installation.id``), else the repository's
(``GET /repos/{repo}/installation``).  Comments are the App's bot account's,
``<slug>[bot]`` (``GET /app``).

Otherwise the token of ``GITHUB_TOKEN``/``GH_TOKEN`` is used for everything.
Tokens and keys are never logged or shown: :class:`~triage.github.client.GitHubClient`
redacts them from every message.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

from triage.errors import InputError, RuntimeFailure
from triage.github.client import GitHubClient, GitHubError
from triage.github.comments import DEFAULT_BOT_LOGIN

__all__ = ["Credentials", "AppCredentials", "TokenCredentials", "from_settings"]

REFRESH_BEFORE = 300.0  # seconds before expiry an installation token is replaced
JWT_LIFETIME = 540


class Credentials:
    """Hands out a :class:`GitHubClient` for a delivery: shared between the
    workers (its connections are reused) and owned here, so never closed by them."""

    bot_login: Optional[str] = None
    kind = "token"

    def client(self, installation_id: Optional[int], repo: str) -> GitHubClient:
        raise NotImplementedError

    def login(self, client: GitHubClient) -> str:
        """The account whose comments are ours."""
        raise NotImplementedError


class TokenCredentials(Credentials):
    """One token for every repository (``GITHUB_TOKEN``/``GH_TOKEN``)."""

    def __init__(self, make: Callable[..., GitHubClient] = GitHubClient) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._client: Optional[GitHubClient] = None

    def client(self, installation_id: Optional[int], repo: str) -> GitHubClient:
        with self._lock:
            if self._client is None:
                self._client = self._make()
            return self._client

    def login(self, client: GitHubClient) -> str:
        if self.bot_login is None:  # asked once: the token's login, else the Actions bot
            self.bot_login = client.viewer_login() or DEFAULT_BOT_LOGIN
        return self.bot_login


class AppCredentials(Credentials):
    kind = "app"

    def __init__(self, app_id: str, private_key: str, *, make: Callable[..., GitHubClient] = GitHubClient,
                 clock: Callable[[], float] = time.time) -> None:
        try:
            import jwt  # noqa: F401  (PyJWT, with cryptography for RS256)
            from cryptography.hazmat.primitives.serialization import load_pem_private_key
        except ImportError:
            raise InputError("a GitHub App needs PyJWT and cryptography: pip install 'triage[serve]'") from None
        try:
            self._key = load_pem_private_key(private_key.encode(), password=None)
        except (ValueError, TypeError):
            raise InputError("TRIAGE_APP_PRIVATE_KEY is not a PEM private key (the App's .pem file)") from None
        self.app_id = app_id
        self._make = make
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[int, tuple[str, float, GitHubClient]] = {}
        self._installations: dict[str, int] = {}

    def jwt(self) -> str:
        import jwt

        now = int(self._clock())
        return jwt.encode({"iat": now - 60, "exp": now + JWT_LIFETIME, "iss": str(self.app_id)}, self._key,
                          algorithm="RS256")

    def _app_client(self) -> GitHubClient:
        return self._make(token=self.jwt())

    def identify(self) -> None:
        """Learn the App's bot login (``GET /app``), checking the key on the way."""
        with self._app_client() as c:
            slug = (c.get_json("/app") or {}).get("slug")
        if slug:
            self.bot_login = f"{slug}[bot]"

    def _installation(self, installation_id: Optional[int], repo: str) -> int:
        if installation_id:
            return int(installation_id)
        if repo not in self._installations:
            with self._app_client() as c:
                self._installations[repo] = int(c.get_json(f"/repos/{repo}/installation")["id"])
        return self._installations[repo]

    def client(self, installation_id: Optional[int], repo: str) -> GitHubClient:
        """A client with the installation's token, replaced with a new token
        (and client) five minutes before the old one expires."""
        installation_id = self._installation(installation_id, repo)
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and cached[1] - self._clock() > REFRESH_BEFORE:
                return cached[2]
            with self._app_client() as c:
                data = c.json(c.request("POST", f"/app/installations/{installation_id}/access_tokens"))
            token, expires = data.get("token"), data.get("expires_at")
            if not token or not expires:
                raise GitHubError(f"GitHub gave no installation token for installation {installation_id}")
            at = datetime.fromisoformat(str(expires).replace("Z", "+00:00")).timestamp()
            # The old client is left to the workers still using it (and the collector).
            self._tokens[installation_id] = (token, at, self._make(token=token))
            return self._tokens[installation_id][2]

    def login(self, client: GitHubClient) -> str:
        return self.bot_login or DEFAULT_BOT_LOGIN


def from_settings(settings: Any, make: Callable[..., GitHubClient] = GitHubClient) -> Credentials:
    """App credentials when ``TRIAGE_APP_ID`` is set, else the plain token
    (:class:`triage.settings.Settings`); clients of ``GITHUB_API_URL``."""
    app_id = settings.app_id
    if not app_id:
        return TokenCredentials(partial(make, settings.github_api_url, settings.github_token))
    make = partial(make, settings.github_api_url)
    key, path = settings.app_private_key, settings.app_private_key_file
    if not key and path:
        try:
            key = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"TRIAGE_APP_PRIVATE_KEY_FILE {path}: {e.strerror}") from None
    if not key:
        raise InputError("TRIAGE_APP_ID is set: give the App's private key in TRIAGE_APP_PRIVATE_KEY "
                         "or TRIAGE_APP_PRIVATE_KEY_FILE")
    creds = AppCredentials(app_id, key, make=make)
    try:
        creds.identify()
    except GitHubError as e:
        raise RuntimeFailure(f"cannot authenticate as GitHub App {app_id}: {e.message}") from None
    return creds


def describe(creds: Any) -> str:
    return f"GitHub App {creds.app_id}" if creds.kind == "app" else "a token"
