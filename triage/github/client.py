"""A small synchronous GitHub REST client with bounded, rate-limit aware retries.

What it does on top of httpx:

* Sends the GitHub headers (``Accept``, ``X-GitHub-Api-Version``, ``User-Agent``)
  and ``Authorization: Bearer <token>``, the latter only to the API origin
  (scheme, host and port of ``api_url``).  Redirects are followed by hand, so a
  302 to a log archive on another host never carries the token.
* Retries, bounded both in count (``max_retries``) and in total time
  (``max_wait``, the sum of the waits plus the time spent in requests):

  - 5xx responses: exponential backoff from 1 s with a little jitter;
  - 429, and 403 that is a rate limit: a primary limit
    (``x-ratelimit-remaining: 0``) waits until ``x-ratelimit-reset``; a
    secondary limit ("secondary rate limit" in the message) waits
    ``Retry-After`` seconds, else 60 s doubling on each hit;
  - ``Retry-After`` is honoured whenever present;
  - network errors: only for idempotent methods (GET, HEAD, OPTIONS, PUT,
    PATCH, DELETE), or for any method when the connection was never
    established (connect error/timeout), because then nothing was sent.

  When the next wait would exceed what is left of ``max_wait`` the client
  stops and raises instead of sleeping.

* POST and retries: by default a POST *is* retried on 5xx and rate-limit
  responses (GitHub normally did not act on them), and is *not* retried on a
  network error once the request may have been sent.  A 502 from a proxy can
  still hide a request that GitHub did process, so callers creating content
  should pass ``retry=False`` and drive the retries themselves with
  :meth:`GitHubClient.retry_budget`, checking for the created object before each
  new attempt -- :func:`triage.github.comments.upsert_comment` does exactly that.

* Errors are one-line :class:`~triage.errors.RuntimeFailure` subclasses (exit 1),
  made from a response by :mod:`triage.github.failures`.
  The token is never part of a message, a ``repr`` or a log line: every message
  built here is passed through :meth:`GitHubClient.redact`, and httpx exceptions
  are not chained.

* The API's URL and the token are the caller's: a command passes those of
  ``GITHUB_API_URL`` and ``GITHUB_TOKEN``/``GH_TOKEN``, as
  :class:`triage.settings.Settings` read them.
"""

from __future__ import annotations

import logging
import random
import re
import time
from typing import Any, Callable, Iterator
from urllib.parse import urljoin

import httpx

from triage import __version__
from triage.errors import InputError
from triage.github.failures import (  # noqa: F401  (the error classes are the client's API too)
    GitHubAuthError,
    GitHubBodyTooLong,
    GitHubError,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubPermissionError,
    GitHubRateLimited,
    GitHubServerError,
    GitHubValidationError,
    error_for,
)

__all__ = [
    "DEFAULT_API_URL",
    "GitHubClient",
    "GitHubError",
    "GitHubAuthError",
    "GitHubPermissionError",
    "GitHubNotFound",
    "GitHubValidationError",
    "GitHubBodyTooLong",
    "GitHubRateLimited",
    "GitHubServerError",
    "GitHubNetworkError",
    "RetryBudget",
]

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
SECONDARY_BASE_WAIT = 60.0

log = logging.getLogger("triage.github")

# Things that look like GitHub credentials, removed from any message even when
# they are not the configured token (e.g. a GH_TOKEN next to a GITHUB_TOKEN).
_TOKEN_PATTERNS = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|"
    r"(?i:(?<=bearer )|(?<=token ))[A-Za-z0-9_.\-]{16,})"
)


class RetryBudget:
    """Counts the retries and the time of one logical operation.

    :meth:`wait` sleeps before the next attempt, or raises the error when it is
    not retryable, when ``max_retries`` retries were made already, or when the
    wait would not fit in what is left of ``max_wait``.
    """

    def __init__(self, client: "GitHubClient") -> None:
        self._client = client
        self.retries = 0
        self.spent = 0.0
        self._backoff_hits = 0
        self._secondary_hits = 0

    @property
    def remaining(self) -> float:
        return self._client.max_wait - self.spent

    def charge(self, seconds: float) -> None:
        """Count time spent outside the waits (the requests themselves)."""
        self.spent += max(0.0, seconds)

    def delay_for(self, err: GitHubError) -> float:
        if err.wait is not None:
            return max(0.0, float(err.wait))
        if err.retry_kind == "secondary":
            return SECONDARY_BASE_WAIT * (2**self._secondary_hits)
        base = float(2**self._backoff_hits)
        return base + random.uniform(0.0, 0.1 * base)

    def wait(self, err: GitHubError) -> None:
        if not err.retryable:
            raise err
        client = self._client
        if self.retries >= client.max_retries:
            err._append(f"gave up after {self.retries} retries")
            raise err
        delay = self.delay_for(err)
        if delay > self.remaining:
            err._append(
                f"gave up: the next attempt would need a wait of {delay:.0f} s, more than "
                f"the {max(self.remaining, 0):.0f} s left of the {client.max_wait:g} s retry "
                "budget; try again later"
            )
            raise err
        if err.retry_kind == "secondary" and err.wait is None:
            self._secondary_hits += 1
        elif err.wait is None:
            self._backoff_hits += 1
        log.info(client.redact(f"{err.message}; retrying in {delay:.1f} s"))
        client._sleep(delay)
        self.spent += delay
        self.retries += 1


# --------------------------------------------------------------------------
# Client


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, url.port or default)


class GitHubClient:
    """GitHub REST client; see the module docstring for headers and retries."""

    def __init__(
        self,
        api_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 4,
        max_wait: float = 120.0,
        sleep: Callable[[float], Any] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        url = (api_url or DEFAULT_API_URL).strip()
        if not re.match(r"^https?://[^/\s]+", url):
            # The value may be anything; do not echo something token-like.
            raise InputError(
                "the GitHub API URL must start with http:// or https:// "
                f"(got {self._static_redact(url)!r}); check GITHUB_API_URL"
            )
        self.api_url = url.rstrip("/")
        self._token = (token or "").strip() or None
        if self._token is not None and not (self._token.isascii() and self._token.isprintable()
                                            and " " not in self._token):
            bad = next(c for c in self._token if not c.isascii() or not c.isprintable() or c == " ")
            # an HTTP header holds ASCII only; the token itself is never shown
            raise InputError(f"the GitHub token (GITHUB_TOKEN or GH_TOKEN) holds a character no token has "
                             f"(U+{ord(bad):04X}); copy it again")
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.max_wait = float(max_wait)
        self._sleep = sleep
        self._clock = clock
        self._api_origin = _origin(httpx.URL(self.api_url))
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
            headers={"User-Agent": f"triage/{__version__}"},
        )

    # -- housekeeping ------------------------------------------------------

    def __repr__(self) -> str:
        token = "***" if self._token else None
        return f"GitHubClient(api_url={self.redact(self.api_url)!r}, token={token!r})"

    __str__ = __repr__

    def __enter__(self) -> "GitHubClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def has_token(self) -> bool:
        return self._token is not None

    @staticmethod
    def _static_redact(text: str) -> str:
        return _TOKEN_PATTERNS.sub("***", text)

    def redact(self, text: str) -> str:
        """``text`` with the token (and anything that looks like one) replaced by ***."""
        text = str(text)
        if self._token:
            text = text.replace(self._token, "***")
        return self._static_redact(text)

    def retry_budget(self) -> RetryBudget:
        return RetryBudget(self)

    # -- URLs and headers ----------------------------------------------------

    def url_for(self, path_or_url: str) -> str:
        if re.match(r"^https?://", path_or_url):
            return path_or_url
        return f"{self.api_url}/{path_or_url.lstrip('/')}"

    def is_api_origin(self, url: str | httpx.URL) -> bool:
        return _origin(httpx.URL(str(url))) == self._api_origin

    def _headers_for(self, url: httpx.URL) -> dict[str, str]:
        if not self.is_api_origin(url):
            # Another host (a signed log-archive URL): no API headers, no token.
            return {}
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _display(self, url: httpx.URL) -> str:
        """The path shown in messages: no query (signatures), host only if foreign."""
        path = url.path
        api_path = httpx.URL(self.api_url).path.rstrip("/")
        if self.is_api_origin(url):
            if api_path and path.startswith(api_path + "/"):
                path = path[len(api_path):]
            return self.redact(path)
        return self.redact(f"{url.host}{path}")

    # -- requests ------------------------------------------------------------

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        follow_redirects: bool = False,
        retry: bool = True,
    ) -> httpx.Response:
        """Send one API request with retries; return the response (< 400).

        A 3xx is returned as is unless ``follow_redirects``; redirects are
        followed by hand (at most 5), sending the token only to the API origin.
        With ``retry=False`` exactly one attempt is made and a retryable failure
        is raised with ``err.retryable`` set, for the caller to handle.
        """
        method = method.upper()
        url = httpx.URL(self.url_for(path_or_url))
        budget = self.retry_budget()
        for _hop in range(MAX_REDIRECTS + 1):
            resp = self._send_with_retries(method, url, params, json, budget, retry)
            if not (follow_redirects and resp.status_code in REDIRECT_STATUSES):
                return resp
            location = resp.headers.get("location")
            if not location:
                return resp
            url = httpx.URL(urljoin(str(resp.url), location))
            if resp.status_code == 303 or (resp.status_code in (301, 302) and method == "POST"):
                method, json = "GET", None
            params = None  # the Location carries its own query
        raise GitHubError(
            f"too many redirects for {method} {self._display(url)} (more than {MAX_REDIRECTS})"
        )

    def _send_with_retries(
        self,
        method: str,
        url: httpx.URL,
        params: dict[str, Any] | None,
        json: Any,
        budget: RetryBudget,
        retry: bool,
    ) -> httpx.Response:
        while True:
            started = time.monotonic()
            try:
                resp = self._http.request(
                    method, url, params=params, json=json, headers=self._headers_for(url)
                )
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:  # not retryable
                raise GitHubError(
                    self.redact(f"request {method} {self._display(url)} failed: {exc}")
                ) from None
            except httpx.TransportError as exc:
                budget.charge(time.monotonic() - started)
                err = self._network_error(method, url, exc)
            except httpx.HTTPError as exc:  # decoding errors and the like: not retryable
                raise GitHubError(
                    self.redact(f"request {method} {self._display(url)} failed: {exc}")
                ) from None
            else:
                budget.charge(time.monotonic() - started)
                log.debug(self.redact(f"{method} {self._display(url)} -> {resp.status_code}"))
                if resp.status_code < 400:
                    return resp
                err = self._error_for(method, url, resp, json)
            if not retry:
                raise err
            budget.wait(err)  # sleeps, or raises err

    def get_json(self, path_or_url: str, params: dict[str, Any] | None = None) -> Any:
        return self.json(self.request("GET", path_or_url, params=params))

    def json(self, resp: httpx.Response) -> Any:
        try:
            return resp.json()
        except ValueError:
            raise GitHubError(
                f"GitHub returned a response that is not JSON for {resp.request.method} "
                f"{self._display(resp.request.url)} (status {resp.status_code})",
                status=resp.status_code,
            ) from None

    def paginate(
        self, path: str, params: dict[str, Any] | None = None, key: str | None = None
    ) -> Iterator[Any]:
        """Yield the items of a list endpoint, following ``Link: rel="next"``.

        Handles bare arrays and ``{"total_count": N, key: [...]}`` objects; with
        no ``key`` the single list-valued field of such an object is used.
        """
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        url: str | None = path
        seen: set[str] = set()
        while url:
            resp = self.request("GET", url, params=query)
            data = self.json(resp)
            yield from self._items(data, key, resp)
            nxt = resp.links.get("next", {}).get("url")
            if not nxt or nxt in seen:
                return
            seen.add(nxt)
            url, query = nxt, None  # follow the link as given

    def _items(self, data: Any, key: str | None, resp: httpx.Response) -> list[Any]:
        if isinstance(data, list):
            return data
        if isinstance(data, dict):
            if key is None:
                lists = [k for k, v in data.items() if isinstance(v, list)]
                if len(lists) == 1:
                    key = lists[0]
            if key is not None and isinstance(data.get(key), list):
                return data[key]
        raise GitHubError(
            f"unexpected response shape for GET {self._display(resp.request.url)}: "
            f"expected a list{f' under {key!r}' if key else ''}"
        )

    def viewer_login(self) -> str | None:
        """The login of the token's account, or None when GitHub will not say.

        The Actions ``GITHUB_TOKEN`` (an installation token) gets 403 "Resource
        not accessible by integration" on ``/user``; that, 404 and having no
        token at all give None.  A bad token still raises GitHubAuthError.
        """
        if not self._token:
            return None
        try:
            data = self.get_json("/user")
        except (GitHubPermissionError, GitHubNotFound):
            return None
        login = data.get("login") if isinstance(data, dict) else None
        return login if isinstance(login, str) and login else None

    # -- errors --------------------------------------------------------------

    def _network_error(self, method: str, url: httpx.URL, exc: httpx.TransportError) -> GitHubError:
        never_connected = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
        retryable = method in IDEMPOTENT_METHODS or never_connected
        detail = str(exc) or type(exc).__name__
        msg = f"could not reach GitHub for {method} {self._display(url)}: {type(exc).__name__}: {detail}"
        if not retryable:
            msg += "; the request may have reached GitHub, so it was not repeated"
        return GitHubNetworkError(
            self.redact(msg),
            maybe_sent=not never_connected,
            method=method,
            path=self._display(url),
            retryable=retryable,
            retry_kind="network",
        )

    def _error_for(self, method: str, url: httpx.URL, resp: httpx.Response, body: Any) -> GitHubError:
        return error_for(resp, method=method, path=self._display(url), url_path=url.path, body=body,
                         now=self._clock(), has_token=bool(self._token), redact=self.redact)
