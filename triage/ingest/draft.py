"""Drafts of new signatures: a failure line made into a rule-file entry, with a
first guess of its class."""

from __future__ import annotations

import re

from triage.ingest.anchors import STOP
from triage.ingest.normalise import readable, words

__all__ = ["draft", "guess_class"]


_CLASS_RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("oom", re.compile(r"out of memory|outofmemory|\boom|memoryerror|cannot allocate memory|oom[-_ ]?kill", re.I)),
    (
        "crash",
        re.compile(
            r"sigsegv|sigabrt|sigbus|sigill|sigkill|segmentation fault|core dumped|\baborted\b|fatal python error"
            r"|signal \d+|exit(?:ed)? (?:with )?(?:code|status) -\d+|exit code (?:134|137|139)\b"
            r"|illegal memory access|\bkilled\b|\bcrash",
            re.I,
        ),
    ),
    (
        "setup-error",
        re.compile(
            r"importerror|modulenotfounderror|no module named|undefined symbol|not a registered|is not registered"
            r"|not registered|unrecognized arguments|command not found|no such file or directory|not supported"
            r"|unsupported|version mismatch|requires? .*version|could not find a version",
            re.I,
        ),
    ),
    (
        "infra",
        re.compile(
            r"timeout|timed out|connection (?:refused|reset|aborted|closed)|connectionerror|network|\bdns\b"
            r"|name resolution|could not resolve|temporary failure|blob|resourcenotfound|\b(?:404|429|500|502|503|504)\b"
            r"|not found|rate limit|no space left|disk quota|self-hosted runner|lost communication|http error|ssl"
            r"|unreachable|failed to connect|connect(?:ion)? to \S+ (?:failed|timed out)|address already in use",
            re.I,
        ),
    ),
)


def guess_class(line: str) -> str:
    """A first guess of a failure line's class; ``unknown`` when unsure."""
    for cls, rx in _CLASS_RULES:
        if rx.search(line):
            return cls
    return "unknown"


def _slug(text: str) -> str:
    found = [w for w in words(text.lower(), quoted=False) if len(w) >= 3 and w not in STOP]
    picked: list[str] = []
    for w in found:
        if w not in picked:
            picked.append(w)
        if len(picked) == 4:
            break
    slug = "-".join(picked)[:48].strip("-") or "signature"
    slug = re.sub(r"[^A-Za-z0-9_.+-]", "-", slug)
    if not slug[0].isalnum():
        slug = "s" + slug
    return slug


def draft(line: str, id: str | None = None) -> dict:
    """A draft signature for a rule file, from one log line.

    ``text`` is the line with its prefix dropped and its volatile parts
    masked, case kept; it matches the original line exactly once normalised.
    ``class`` is a guess (:func:`guess_class`); ``meaning`` and ``remedy``
    are left for a person to fill in.
    """
    text = readable(line.rstrip("\r\n"))
    return {
        "id": id or _slug(text),
        "text": text,
        "class": guess_class(line),
        "meaning": "",
        "remedy": "",
    }
