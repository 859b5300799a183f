"""Where the engine reads runs from, and how it knows they changed.

The engine asks for runs a config at a time (or by run id, or all of them).
A source answers from a list (:class:`ListSource`: tests, replay, a run
file) or from the knowledge base, loading a config's runs when first asked
(``triage.kb.runsource``).  For each thing read it also gives a fingerprint
that changes whenever those runs change, so that a piece of an earlier
evaluation can be reused while everything it read is as it was
(``triage.rules.engine.memo``).

Read tokens are pairs: ``("c", config)`` a config's runs, ``("i", run_id)``
the runs of one run id, ``("*", "")`` every run, ``("p", '["config", "key",
...]')`` a config's runs that recorded every key in their provenance.
"""

from __future__ import annotations

import hashlib
import json
from typing import Optional, Protocol, Sequence

from triage.rules.engine.records import RunRec

Token = tuple[str, str]
ALL: Token = ("*", "")


class RunSource(Protocol):
    def all(self) -> list[RunRec]:
        """Every run, in the order recorded."""

    def config(self, name: str) -> list[RunRec]:
        """A config's runs, in the order recorded ([] for none)."""

    def run_id(self, run_id: str) -> list[RunRec]:
        """The runs of one run id (one per config), in the order recorded."""

    def configs(self) -> list[str]:
        """The configs that have runs, in the order of their first run."""

    def fingerprint(self, token: Token) -> str:
        """What the runs a token names are now, as a short text ("" for none)."""

    def holds(self, token: Token, fingerprint: str) -> bool:
        """Whether the runs a token names still have ``fingerprint`` (a source may know
        without working out the fingerprint anew)."""

    def order(self, run: RunRec) -> int:
        """A run's place in the order recorded."""

    def appended(self, config: str, fingerprint: str) -> Optional[list[RunRec]]:
        """The config's runs recorded since its runs had ``fingerprint``, in the order
        recorded, when those runs are unchanged otherwise; None when they are not (or
        the source cannot tell)."""


def with_keys(config: str, keys: Sequence[str]) -> Token:
    return ("p", json.dumps([config, *sorted(set(keys))], ensure_ascii=False))


def config_and_keys(token: Token) -> tuple[str, list[str]]:
    config, *keys = json.loads(token[1])
    return config, keys


def digest(parts: Sequence[object]) -> str:
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:24]


class ListSource:
    """Runs given as a list, in the order recorded; fingerprints hash their content."""

    def __init__(self, runs: Sequence[RunRec]) -> None:
        """A run's place in the order recorded is its place in ``runs``."""
        self._runs = list(runs)
        self._pos = {id(r): i for i, r in enumerate(self._runs)}
        self._by_config: dict[str, list[RunRec]] = {}
        self._by_id: dict[str, list[RunRec]] = {}
        for r in self._runs:
            self._by_config.setdefault(r.config, []).append(r)
            self._by_id.setdefault(r.run_id, []).append(r)
        self._fps: dict[Token, str] = {}

    def all(self) -> list[RunRec]:
        return self._runs

    def config(self, name: str) -> list[RunRec]:
        return self._by_config.get(name, [])

    def run_id(self, run_id: str) -> list[RunRec]:
        return self._by_id.get(run_id, [])

    def configs(self) -> list[str]:
        return list(self._by_config)

    def order(self, run: RunRec) -> int:
        pos: Optional[int] = self._pos.get(id(run))
        return pos if pos is not None else run.seq

    def runs_of(self, token: Token) -> list[RunRec]:
        """The runs a token names."""
        kind, name = token
        if kind == "p":
            config, keys = config_and_keys(token)
            return [r for r in self.config(config) if all(k in r.provenance for k in keys)]
        return self._runs if kind == "*" else self.config(name) if kind == "c" else self.run_id(name)

    def fingerprint(self, token: Token) -> str:
        fp = self._fps.get(token)
        if fp is None:
            runs = self.runs_of(token)
            fp = self._fps[token] = self._digest(runs) if runs else ""
            if token[0] == "c" and runs:  # with the count: what ``appended`` checks the first runs against
                fp = self._fps[token] = f"{len(runs)}:{fp}"
        return fp

    def holds(self, token: Token, fingerprint: str) -> bool:
        return self.fingerprint(token) == fingerprint

    def _digest(self, runs: Sequence[RunRec]) -> str:
        return digest([(self.order(r), repr(r)) for r in runs])

    def appended(self, config: str, fingerprint: str) -> Optional[list[RunRec]]:
        runs = self.config(config)
        count, _, was = fingerprint.partition(":")
        if not fingerprint:
            return list(runs)
        if not count.isdigit() or int(count) > len(runs) or self._digest(runs[:int(count)]) != was:
            return None
        return runs[int(count):]
