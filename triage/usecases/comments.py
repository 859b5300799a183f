"""`/triage` commands in a PR comment, read as a person wrote them.

A command is a line of its own that starts with ``/triage`` (after at most
three spaces).  Lines in fenced code blocks (``` or ~~~), indented code (four
spaces or a tab) and ``>`` quotes are not commands: quoting someone's command,
or showing one, does nothing.  At most :data:`LIMIT` command lines are read;
the rest are counted in ``dropped``.  A line that is not a well-formed command
is kept in ``malformed`` with why, to be quoted back to its author.

The grammar (``because`` starts the reason, which runs to the end of the line):

* ``/triage exclude RUN because …`` and ``/triage include RUN``;
* ``/triage mark BISECT POINT good|bad because …``;
* ``/triage evidence HYPOTHESIS rules_out|supports|confirms because …``;
* ``/triage run [RECIPE …]``, ``/triage refresh``, ``/triage help``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["LIMIT", "USAGE", "Command", "Malformed", "Read", "parse"]

LIMIT = 10  # command lines read from one comment
MAX_LINE = 1000  # characters in a command line
QUOTED = 200  # characters of a malformed line quoted back

USAGE = {
    "exclude": "/triage exclude RUN because …",
    "include": "/triage include RUN",
    "mark": "/triage mark BISECT POINT good|bad because …",
    "evidence": "/triage evidence HYPOTHESIS rules_out|supports|confirms because …",
    "run": "/triage run [RECIPE …]",
    "refresh": "/triage refresh",
    "help": "/triage help",
}
# verb -> (the words it needs, whether it takes more, whether it needs a reason)
_SHAPE = {
    "exclude": (("RUN",), False, True),
    "include": (("RUN",), False, False),
    "mark": (("BISECT", "POINT", "good|bad"), False, True),
    "evidence": (("HYPOTHESIS", "rules_out|supports|confirms"), False, True),
    "run": ((), True, False),
    "refresh": ((), False, False),
    "help": ((), False, False),
}

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)\Z")
_QUOTE = re.compile(r" {0,3}>")
_COMMAND = re.compile(r" {0,3}/triage(?:\s|\Z)")
_BECAUSE = re.compile(r"(?:\A|\s)because(?:\s+|\Z)")


@dataclass(frozen=True)
class Command:
    verb: str
    args: tuple[str, ...]
    because: Optional[str]
    line: str  # as written, without its indentation


@dataclass(frozen=True)
class Malformed:
    line: str  # as written (cut short past QUOTED characters)
    why: str


@dataclass
class Read:
    items: list[Command | Malformed] = field(default_factory=list)  # in the order written
    dropped: int = 0  # command lines past LIMIT, not read

    @property
    def commands(self) -> list[Command]:
        return [x for x in self.items if isinstance(x, Command)]

    @property
    def malformed(self) -> list[Malformed]:
        return [x for x in self.items if isinstance(x, Malformed)]


def command_lines(text: str) -> list[str]:
    """The lines of ``text`` that are commands: outside code blocks and quotes."""
    found: list[str] = []
    fence: Optional[str] = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not opening.group(2).strip():
                fence = None
            continue
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)
            continue
        if line.startswith(("    ", "\t")) or _QUOTE.match(line):
            continue
        if _COMMAND.match(line):
            found.append(line.strip())
    return found


def parse(text: str, limit: int = LIMIT) -> Read:
    """The commands of a comment, its malformed command lines, and how many were past ``limit``."""
    read = Read()
    lines = command_lines(text)
    read.dropped = max(0, len(lines) - limit)
    for line in lines[:limit]:
        if len(line) > MAX_LINE:
            read.items.append(Malformed(_cut(line), f"the line is too long (over {MAX_LINE} characters)"))
            continue
        got = _one(line)
        read.items.append(got if isinstance(got, Command) else Malformed(_cut(line), got))
    return read


def _cut(line: str) -> str:
    return line if len(line) <= QUOTED else line[:QUOTED] + "…"


def _one(line: str) -> Command | str:
    """A command line read, or why it cannot be."""
    from triage.rules.language.schema import THEN_ALIASES

    rest = line[len("/triage"):].strip()
    if not rest:
        return "no command: `/triage help` lists them"
    verb, rest = (rest.split(None, 1) + [""])[:2]
    if verb not in _SHAPE:
        return f"unknown command {verb!r}: `/triage help` lists them"
    needs, more, reason = _SHAPE[verb]
    said = _BECAUSE.search(rest)
    args = tuple((rest[:said.start()] if said else rest).split())
    because = rest[said.end():].strip() if said else None
    usage = USAGE[verb]
    if not needs and not more and (args or because is not None):
        return f"takes nothing: {usage}"
    if len(args) < len(needs):
        return f"needs {' '.join(needs[len(args):])}: {usage}"
    if len(args) > len(needs) and not more:
        return f"too many words before `because`: {usage}" if reason else f"too many words: {usage}"
    if reason and not because:
        return f"needs a reason: {usage}"
    if not reason and because is not None:
        return f"takes no reason: {usage}"
    if verb == "mark" and args[2] not in ("good", "bad"):
        return f"expected good or bad, not {args[2]!r}: {usage}"
    if verb == "evidence" and args[1] not in THEN_ALIASES:
        return f"expected rules_out, supports, confirms or inconclusive, not {args[1]!r}: {usage}"
    return Command(verb, args, because, line)
