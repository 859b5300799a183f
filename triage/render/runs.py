"""The runs a view shows, found by key: all of them in memory, or a few at a time from the knowledge base.

A report names a few runs of many (the newest 50, the first 20 behind each
piece of evidence, bisect point and recipe) and counts the rest.  Given the
engine's run source instead of every run, :class:`SourceRuns` asks for just
those (in one query per 500 keys, fetched before the view is built), so that
a report right after a change does not read a hundred thousand runs to show
fifty.  :class:`ListRuns` answers the same questions from a list.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from triage.rules.engine.keys import Keys, splits, tails


class ListRuns:
    def __init__(self, runs: Sequence[Any]) -> None:
        self._runs = list(runs)
        self._by_key = {r.key: r for r in self._runs}
        self._heads: Optional[dict[str, Any]] = None

    def prefetch(self, keys: Iterable[str]) -> None:
        pass

    def prefetch_refs(self, keys: Iterable[str]) -> None:
        pass

    def named_as(self, refs: Iterable[tuple[str, str, str, Optional[str]]]) -> None:
        pass

    def ref(self, key: str) -> Optional[tuple[str, str, Optional[str]]]:
        run = self._by_key.get(key)
        return (run.run_id, run.config, run.url) if run is not None else None

    def fetched(self) -> list[Any]:
        return []  # every run is at hand already

    def warned(self, messages: Iterable[str]) -> list[str]:
        return []

    def config_of(self, key: str) -> Optional[str]:
        run = self._by_key.get(key)
        return run.config if run is not None else None

    def configs_of(self, keys: Iterable[str]) -> set[str]:
        by_key = self._by_key
        return {run.config for key in keys if (run := by_key.get(key)) is not None}

    def get(self, key: str) -> Any:
        return self._by_key.get(key)

    def newest(self, limit: Optional[int]) -> list[Any]:
        shown = sorted(self._runs, key=lambda r: (r.time or "",))
        return shown if limit is None else shown[max(0, len(shown) - limit):]

    def total(self) -> int:
        return len(self._runs)

    def head(self, prefix: str, short: Any) -> Any:
        """The first run whose warning prefix is ``prefix``: ``ID (config): `` or ``run ID (config): ``."""
        if self._heads is None:
            self._heads = {}
            for r in self._runs:
                head = f"{r.run_id} ({short(r.config)}): "
                self._heads.setdefault(head, r)
                self._heads.setdefault("run " + head, r)
        return self._heads.get(prefix)


class SourceRuns:
    def __init__(self, source: Any, config_prefix: Optional[str]) -> None:
        self._source = source
        self._configs = set(source.configs())
        self._prefix = config_prefix or ""
        self._known: dict[str, Any] = {}
        self._asked: set[str] = set()
        self._missing: set[str] = set()  # asked for, no such run
        self._refs: dict[str, tuple[str, str, Optional[str]]] = {}  # key -> (run id, config, URL), of prefetch_refs
        self._looked: set[str] = set()  # asked for whole or by prefetch_refs (a run found: in _known or _refs)

    def _pairs(self, key: str) -> list[tuple[str, str]]:
        """(run id, config) for each way ``key`` splits into a known config."""
        return [(run_id, config) for run_id, config in splits(key) if config in self._configs]

    def prefetch(self, keys: Iterable[str]) -> None:
        wanted = [k for k in dict.fromkeys(keys) if k not in self._asked]
        self._asked.update(wanted)
        self._looked.update(wanted)
        pairs = [p for k in wanted for p in self._pairs(k)]
        for r in self._source.by_keys(pairs) if pairs else []:
            self._known.setdefault(r.key, r)
        self._missing.update(k for k in wanted if k not in self._known)

    def named_as(self, refs: Iterable[tuple[str, str, str, Optional[str]]]) -> None:
        """Runs named already, (key, run id, config, URL) each, as the evaluation holds
        them (a recipe's first runs): :meth:`prefetch_refs` does not look them up.  Only a
        key with one "/", which no other run can share."""
        for key, run_id, config, url in refs:
            if key not in self._looked and key.count("/") == 1:
                self._looked.add(key)
                self._refs[key] = (run_id, config, url)

    def prefetch_refs(self, keys: Iterable[str]) -> None:
        """Look up what names each run (:meth:`ref`) of these keys, in one query per 2,000 keys,
        without reading the runs whole: for keys the view shows as links and nothing more."""
        wanted = [k for k in dict.fromkeys(keys) if k not in self._looked]
        self._looked.update(wanted)
        pairs = [p for k in wanted for p in self._pairs(k)]
        for run_id, config, url in self._source.refs_by_keys(pairs) if pairs else []:
            self._refs.setdefault(f"{run_id}/{config}", (run_id, config, url))
        self._missing.update(k for k in wanted if k not in self._known and k not in self._refs)

    def ref(self, key: str) -> Optional[tuple[str, str, Optional[str]]]:
        """(run id, config, URL) of the run ``key`` names (None: no such run)."""
        run = self._known.get(key)
        if run is not None:
            return run.run_id, run.config, run.url
        if key not in self._looked:
            self.prefetch_refs([key])
        return self._refs.get(key)

    def fetched(self) -> list[Any]:
        return list(self._known.values())

    def config_of(self, key: str) -> Optional[str]:
        """The config of the run ``key`` names (None: no such run).  A key the
        evaluation derived from a run splits into one known config: no lookup."""
        if key in self._known or key in self._looked:
            run = self._known.get(key)
            if run is None and key in self._refs:
                return self._refs[key][1]
            return run.config if run is not None else None
        pairs = self._pairs(key)
        if len(pairs) == 1:
            return pairs[0][1]
        run = self.get(key)
        return run.config if run is not None else None

    def configs_of(self, keys: Iterable[str]) -> set[str]:
        """The configs of the runs ``keys`` name, as :meth:`config_of` says each:
        a piece of evidence may read thousands of runs, so the usual key (one
        "/", a known config) is split here, without a call of its own."""
        out: set[str] = set()
        known, asked, configs = self._known, self._looked, self._configs
        if isinstance(keys, Keys) and not self._missing:
            # every key asked for was found: a key of one "/" and a known config is of that
            # config, looked up or not; so each distinct text after the first "/" says it once
            slow = set()
            for tail in tails(keys):
                if "/" not in tail and tail in configs:
                    out.add(tail)
                else:
                    slow.add(tail)
            if not slow:
                return out
            keys = [key for key in keys if key.partition("/")[2] in slow]
        for key in keys:
            if key not in known and key not in asked:
                at = key.find("/")
                if at != -1 and key.find("/", at + 1) == -1 and (config := key[at + 1:]) in configs:
                    out.add(config)
                    continue
            config = self.config_of(key)
            if config is not None:
                out.add(config)
        return out

    def get(self, key: str) -> Any:
        if key not in self._asked:
            self.prefetch([key])
        return self._known.get(key)

    def newest(self, limit: Optional[int]) -> list[Any]:
        runs = self._source.all() if limit is None else self._source.newest(limit)
        if limit is None:
            runs = sorted(runs, key=lambda r: (r.time or "",))
        for r in runs:
            self._known.setdefault(r.key, r)
            self._asked.add(r.key)
            self._looked.add(r.key)
            self._missing.discard(r.key)
        return runs

    def total(self) -> int:
        return self._source.count()

    def _named_by(self, prefix: str) -> list[str]:
        """The keys of the runs a warning prefix ``ID (config): `` (or ``run ID (config): ``) could name."""
        if not prefix.endswith("): "):
            return []
        keys = []
        for text in (prefix, prefix[4:] if prefix.startswith("run ") else None):
            if text is None:
                continue
            at = text.find(" (")
            while at != -1:
                run_id, shown = text[:at], text[at + 2:-3]
                keys += [f"{run_id}/{config}" for config in sorted({shown, self._prefix + shown} & self._configs)]
                at = text.find(" (", at + 1)
        return keys

    def warned(self, messages: Iterable[str]) -> list[str]:
        """The keys of every run the warnings could name (to look up with the others, in one go)."""
        return [k for text in messages if (at := text.find("): ")) >= 0 for k in self._named_by(text[:at + 3])]

    def head(self, prefix: str, short: Any) -> Any:
        """As :meth:`ListRuns.head`: the candidates the prefix could name, the first recorded."""
        heads = (prefix, prefix[4:]) if prefix.startswith("run ") else (prefix,)
        found = [run for key in self._named_by(prefix) if (run := self.get(key)) is not None
                 and f"{run.run_id} ({short(run.config)}): " in heads]
        return min(found, key=lambda r: r.seq) if found else None


def runs_of(bundle: Any) -> Any:
    """The view's runs: the bundle's list, or its run source when it holds no list."""
    if getattr(bundle, "source", None) is not None and not bundle.runs:
        return SourceRuns(bundle.source, bundle.spec.config_prefix)
    return ListRuns(bundle.runs)
