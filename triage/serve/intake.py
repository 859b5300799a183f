"""A webhook delivery's body, read so that no anonymous client can hold the server.

* The signature header's presence and form are checked before a byte of the
  body is read (401), and a body declared over the size limit is refused at
  once (413).
* Every body takes one of the places of bodies read before their signature
  is verified (``TRIAGE_MAX_PENDING_REQUESTS``) while it arrives, and a body
  over 1 MiB, or of unknown size, one of a few upload slots as well
  (``TRIAGE_MAX_PENDING_UPLOADS``): when either is full the answer is 503 at
  once.  A signed delivery (small, sent at once) holds its place for
  milliseconds, so idle uploads, which take the upload slots first, never keep
  it out; idle small bodies can, for at most the time limit below, which is
  what bounds the memory they hold.
* The body is streamed under a time limit per request
  (``TRIAGE_MAX_BODY_SECONDS``, 408), its HMAC computed as it arrives.
* A client that goes away costs one log line, not a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from starlette.requests import ClientDisconnect, Request

from triage import limits

__all__ = ["Refused", "Intake", "SMALL"]

SIGNATURE = re.compile(r"sha256=[0-9a-fA-F]{64}\Z")
SMALL = 1 << 20  # a body this size or less needs no upload slot


@dataclass
class Refused:
    status: int
    outcome: str
    extra: dict[str, Any] = field(default_factory=dict)


class Intake:
    """Reads bodies for one app; its counters live on the event loop (one thread)."""

    def __init__(self, secret: Optional[bytes], max_body: int) -> None:
        self.secret, self.max_body = secret, max_body
        self.uploads = 0  # bodies over SMALL on their way now
        self.pending = 0  # bodies of any size on their way now

    def precheck(self, request: Request) -> Optional[Refused]:
        """What the headers alone decide: the signature's form, the declared size."""
        header = request.headers.get("x-hub-signature-256")
        if self.secret is not None and (header is None or not SIGNATURE.match(header.strip())):
            return Refused(401, "bad signature")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or len(length) > 12):
            return Refused(400, "bad Content-Length")
        if length is not None and int(length) > self.max_body:
            return Refused(413, "too large", {"limit": self.max_body})
        return None

    async def read(self, request: Request) -> Union[bytes, Refused]:
        """The verified raw body, or why it was refused."""
        refused = self.precheck(request)
        if refused is not None:
            return refused
        length = request.headers.get("content-length")
        big = length is None or int(length) > SMALL
        if self.pending >= limits.get("pending_requests") or big and self.uploads >= limits.get("pending_uploads"):
            return Refused(503, "busy", {"retry_after": 5})
        self.uploads += big
        self.pending += 1
        try:
            async with asyncio.timeout(limits.seconds("body_seconds")):
                return await self._stream(request)
        except TimeoutError:
            return Refused(408, "body too slow", {"limit_seconds": limits.seconds("body_seconds")})
        except ClientDisconnect:
            return Refused(400, "client went away")
        finally:
            self.uploads -= big
            self.pending -= 1

    async def _stream(self, request: Request) -> Union[bytes, Refused]:
        mac = hmac.new(self.secret, digestmod=hashlib.sha256) if self.secret is not None else None
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                return Refused(413, "too large", {"limit": self.max_body})
            if mac is not None:
                mac.update(chunk)
            chunks.append(chunk)
        if mac is not None:
            header = request.headers.get("x-hub-signature-256", "").strip()
            if not hmac.compare_digest(("sha256=" + mac.hexdigest()).encode(), header.lower().encode()):
                return Refused(401, "bad signature")
        return b"".join(chunks)
