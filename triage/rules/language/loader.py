"""Load rule files strictly, keeping line numbers for every problem.

YAML is composed into nodes (which carry marks), turned into plain data while
recording where each value and key stood, then validated by the pydantic
schema.  Every problem, from YAML syntax to an unknown hypothesis name, is
collected as ``path:line:col: message``; a set of files with any problem is
refused whole.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from triage.errors import InputError, Problem, RuleFileError
from triage.inputs import read_bounded
from triage.rules.language.schema import Condition, RuleFile, Selector
from triage.rules.language.filecheck import check_file
from triage.rules.language.yamlread import YAML_LOADER, Path_, parse_yaml



@dataclass
class LoadedFile:
    """One validated rule file with its positions, for later checks."""

    path: str
    sha256: str
    spec: RuleFile
    values: dict[Path_, tuple[int, int]] = field(repr=False, default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(repr=False, default_factory=dict)
    # Items left out after a schema error, so the rest can still be checked:
    # their ids (for references) and where the kept items stood before.
    dropped: dict[str, set[str]] = field(repr=False, default_factory=dict)
    renumber: dict[Path_, Path_] = field(repr=False, default_factory=dict)
    warnings: list[Problem] = field(default_factory=list)  # the file loads, but may not say what was meant

    @property
    def summary(self) -> tuple:
        """What the cross-file checks read of a file: its investigation's (id, repo, PR), or
        None, and its signatures' ids (a cached file keeps it beside its parse)."""
        inv = self.spec.investigation
        return ((inv.id, inv.repo, inv.pr) if inv is not None else None), tuple(s.id for s in self.spec.signatures)

    def where(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        if path[:2] in self.renumber:
            path = self.renumber[path[:2]] + path[2:]
        table = self.keys if key else self.values
        while path:
            if path in table:
                return table[path]
            if not key and path in self.keys:
                return self.keys[path]
            path = path[:-1]
        return self.values.get((), (1, 1))




_EXPECT = {
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


def _resolve(data: Any, loc: tuple) -> tuple[Path_, bool]:
    """Follow a pydantic error location through the data; skip union tags."""
    path: list[Any] = []
    cur = data
    skipped = False
    for part in loc:
        if isinstance(cur, dict) and part in cur:
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, dict) and part not in cur and isinstance(part, str) and part == loc[-1]:
            path.append(part)  # a missing or unknown key: point at it / its mapping
        else:
            skipped = True
    return tuple(path), skipped


def _allowed_keys(data: Any, path: Path_) -> list[str]:
    """The keys a mapping at `path` may have, for did-you-mean hints."""
    model: Any = RuleFile
    for part in path[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", {})
        info = fields.get(part) or next((f for f in fields.values() if f.alias == part), None)
        if info is None:
            return []
        model = _model_of(info.annotation)
        if model is None:
            return []
    fields = getattr(model, "model_fields", {})
    return [f.alias or name for name, f in fields.items()]


def _model_of(annotation: Any) -> Any:
    from typing import get_args

    stack = [annotation]
    while stack:
        a = stack.pop()
        if isinstance(a, type) and hasattr(a, "model_fields"):
            if a is Selector:
                return Condition  # a Condition accepts everything a Selector does and more
            return a
        stack.extend(get_args(a))
    return None


def _messages(errors: list[dict], data: Any, f: LoadedFile) -> list[Problem]:
    grouped: dict[Path_, list[dict]] = {}
    for err in errors:
        path, _ = _resolve(data, tuple(err["loc"]))
        err["_path"] = path
        grouped.setdefault(path, []).append(err)
    # Drop errors that a deeper one explains (union members that failed early).
    paths = sorted(grouped, key=len, reverse=True)
    keep: list[Path_] = []
    for p in paths:
        if any(k[: len(p)] == p and len(k) > len(p) for k in keep):
            continue
        keep.append(p)
    out: list[Problem] = []
    for p in keep:
        errs = grouped[p]
        types = {e["type"] for e in errs}
        if "extra_forbidden" in types:
            key = p[-1] if p else "?"
            msg = f"unknown key {key!r}"
            allowed = _allowed_keys(data, p)
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            if close:
                msg += f" (did you mean {close[0]!r}?)"
            elif allowed:
                msg += f"; expected one of: {', '.join(sorted(allowed))}"
            line, col = f.where(p, key=True)
        elif "missing" in types:
            msg = f"missing required key {p[-1]!r}"
            line, col = f.where(p[:-1])
        else:
            expectations: list[str] = []
            others: list[str] = []
            for e in errs:
                if e["type"] in _EXPECT:
                    expectations.append(_EXPECT[e["type"]])
                elif e["type"] == "literal_error":
                    expectations.append(e.get("ctx", {}).get("expected", e["msg"]))
                else:
                    text = e["msg"]
                    for prefix in ("Value error, ", "Assertion failed, "):
                        if text.startswith(prefix):
                            text = text[len(prefix):]
                    others.append(text[:1].lower() + text[1:])
            if p == ("schema_version",):
                msg = f"unsupported schema_version {_show(errs[0].get('input'))}; this triage reads 1"
            elif others:
                msg = "; ".join(dict.fromkeys(others))
            else:
                got = errs[0].get("input")
                expected = " or ".join(dict.fromkeys(expectations))
                msg = f"expected {expected}, got {_show(got)}"
            line, col = f.where(p)
        out.append(Problem(f.path, line, col, msg))
    return out


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return repr(value)


_CUT = re.compile(r"[ \t]+(#\d+\b.*)$")


def comment_cuts(text: str, fname: str) -> list[Problem]:
    """Warnings for plain scalars cut short by a ` #NNNN` that YAML reads as a comment.

    ``because: main, which does not have #14462`` keeps only "main, which
    does not have"; investigators write PR and issue numbers all the time."""
    if not re.search(r"[ \t]#\d", text):
        return []
    lines = text.splitlines()
    out: list[Problem] = []
    try:
        root = yaml.compose(text, Loader=YAML_LOADER)
    except yaml.YAMLError:
        return []
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend(v for kv in node.value for v in kv)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.ScalarNode) and not node.style and isinstance(node.value, str):
            end = node.end_mark
            rest = lines[end.line][end.column:] if end.line < len(lines) else ""
            m = _CUT.match(rest)
            if m and node.value:
                full = f"{node.value} {m.group(1)}".replace('"', '\\"')
                out.append(Problem(fname, node.start_mark.line + 1, node.start_mark.column + 1,
                                   f"warning: the text stops before {m.group(1).split()[0]!r}, which YAML reads as a "
                                   f'comment; quote it to keep it: "{full}"'))
    return sorted(out)


def load_file(path: Path, display: str | None = None) -> tuple[LoadedFile | None, list[Problem]]:
    """Load and validate one rule file (no cross-file checks)."""
    from pydantic import ValidationError

    fname = display or str(path)
    try:
        raw = read_bounded(path, "rule_file_bytes")
    except InputError as e:
        return None, [Problem(fname, 1, 1, e.message.removeprefix(f"{path}: "))]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, [Problem(fname, 1, 1, "not UTF-8 text")]
    data, pos, problems = parse_yaml(text, fname)
    if data is None and problems:
        return None, problems
    stub = LoadedFile(fname, hashlib.sha256(raw).hexdigest(), None, pos.values, pos.keys)  # type: ignore[arg-type]
    stub.warnings = comment_cuts(text, fname)
    if not isinstance(data, dict):
        return None, [Problem(fname, 1, 1, "a rule file is a mapping with schema_version: 1")]
    try:
        spec = RuleFile.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        problems += _messages(errors, data, stub)
        # Check what validated too (references, cycles), so one pass lists every problem.
        partial = _without_bad_items(data, errors, stub)
        if partial is not None:
            stub.spec = partial
            problems += check_file(stub)
        return None, problems
    stub.spec = spec
    problems += check_file(stub)
    return stub, problems


_SECTIONS = ("hypotheses", "recipes", "rules", "evidence", "bisects", "signatures", "extractors", "exclusive")


def _without_bad_items(data: dict, errors: list[dict], f: LoadedFile) -> RuleFile | None:
    """The file without the list items (and investigation keys) that failed
    validation, or None when what is left still fails.  Records the ids of
    the items left out and where each kept item stood."""
    from pydantic import ValidationError

    bad: dict[str, set[Any]] = {}
    for err in errors:
        path, _ = _resolve(data, tuple(err["loc"]))
        if len(path) >= 2 and (path[0] in _SECTIONS or path[0] == "investigation"):
            bad.setdefault(path[0], set()).add(path[1])
        elif len(path) == 1 and path[0] not in RuleFile.model_fields:
            bad.setdefault("", set()).add(path[0])  # an unknown top-level key
        else:
            return None
    kept = {k: v for k, v in data.items() if k not in bad.get("", set())}
    refs = data.get("investigation", {}).get("references") if isinstance(data.get("investigation"), dict) else None
    if "references" in bad.get("investigation", set()) and isinstance(refs, dict):
        f.dropped["references"] = {str(k) for k in refs}  # named, though one failed: no "needs a reference"
    if "investigation" in bad and isinstance(kept.get("investigation"), dict):
        kept["investigation"] = {k: v for k, v in kept["investigation"].items() if k not in bad["investigation"]}
    for section in _SECTIONS:
        items = kept.get(section)
        if section not in bad or not isinstance(items, list):
            continue
        kept[section] = []
        for i, item in enumerate(items):
            if i in bad[section]:
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    f.dropped.setdefault(section, set()).add(item["id"])
                continue
            f.renumber[(section, len(kept[section]))] = (section, i)
            kept[section].append(item)
    try:
        return RuleFile.model_validate(kept)
    except ValidationError:
        f.dropped.clear()
        f.renumber.clear()
        return None


@dataclass
class RuleSet:
    files: list[LoadedFile]

    @property
    def warnings(self) -> list[Problem]:
        return [w for f in self.files for w in f.warnings]

    @property
    def investigations(self) -> list[LoadedFile]:
        return [f for f in self.files if f.spec.investigation is not None]


def rule_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their ``*.yaml``/``*.yml`` files, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(x for x in p.iterdir() if x.suffix in (".yaml", ".yml") and x.is_file())
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    return out


def load_rules(paths: Iterable[str | Path], warnings: list[Problem] | None = None) -> RuleSet:
    """Load rule files; refuse them all, listing every problem, if any is bad.

    Warnings (text a ` #NNNN` comment cut short) go to `warnings` when given,
    for bad files too."""
    files: list[LoadedFile] = []
    problems: list[Problem] = []
    for p in rule_paths(paths):
        loaded, probs = load_file(p)
        problems += probs
        if loaded is not None:
            files.append(loaded)
        elif warnings is not None and not any(pr.message.startswith("YAML syntax") for pr in probs):
            try:
                warnings += comment_cuts(read_bounded(p, "rule_file_bytes").decode("utf-8"), str(p))
            except (InputError, UnicodeDecodeError):
                pass
    if warnings is not None:
        warnings += [w for f in files for w in f.warnings]
    problems += _cross_file(files)
    if problems:
        raise RuleFileError(problems)
    return RuleSet(files)


def _cross_file(files: list[LoadedFile]) -> list[Problem]:
    """Ids and PRs defined twice across files; a file's positions are read only for a problem."""
    problems: list[Problem] = []
    seen_inv: dict[str, str] = {}
    seen_pr: dict[tuple[str, int], str] = {}
    seen_sig: dict[str, str] = {}
    for f in files:
        inv, signatures = f.summary
        if inv is not None:
            iid, repo, pr = inv
            if iid in seen_inv:
                line, col = f.where(("investigation", "id"))
                problems.append(Problem(f.path, line, col, f"investigation {iid!r} is also defined in {seen_inv[iid]}"))
            seen_inv.setdefault(iid, f.path)
            key = (repo, pr)
            if key in seen_pr:
                line, col = f.where(("investigation", "pr"))
                problems.append(Problem(f.path, line, col, f"{repo}#{pr} already has an investigation in {seen_pr[key]}"))
            seen_pr.setdefault(key, f.path)
        for i, sid in enumerate(signatures):
            if sid in seen_sig and seen_sig[sid] != f.path:
                line, col = f.where(("signatures", i, "id"))
                problems.append(Problem(f.path, line, col, f"signature {sid!r} is also defined in {seen_sig[sid]}"))
            seen_sig.setdefault(sid, f.path)
    return problems
