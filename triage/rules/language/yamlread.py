"""YAML into plain data, keeping the line and column of every value and key.

Composed into nodes (which carry marks) by libyaml when present, then built
value by value within the limits (``TRIAGE_MAX_YAML_NODES`` counts aliases
each time they are used; ``TRIAGE_MAX_YAML_DEPTH``; ``TRIAGE_MAX_RULE_TEXT``).
A scalar that cannot be built (a date that is no date, ``!!int abc``, an
integer of 5,000 digits), a key that is not text or a number, a NUL
character: each is a problem with its place, never a traceback.
"""

from __future__ import annotations

from typing import Any

import yaml

from triage import limits
from triage.errors import Problem
from triage.rules.language.yamlhints import hint

__all__ = ["Path_", "parse_yaml", "YAML_LOADER"]

try:  # the C parser keeps marks too, and is several times faster
    YAML_LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    YAML_LOADER = yaml.SafeLoader

Path_ = tuple  # a data path: keys and list indexes


class _Positions:
    def __init__(self) -> None:
        self.values: dict[Path_, tuple[int, int]] = {}
        self.keys: dict[Path_, tuple[int, int]] = {}
        # The budget: aliases repeat what they name, so a few hundred bytes
        # can stand for billions of values ("billion laughs").
        self.left = limits.get("yaml_nodes")
        self.depth = limits.get("yaml_depth")


class _TooBig(Exception):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(node: yaml.Node, path: Path_, pos: _Positions, problems: list, fname: str, loader) -> Any:
    pos.left -= 1
    if pos.left < 0:
        line, col = _mark(node)
        raise _TooBig(Problem(fname, line, col, f"the file expands to more than {limits.get('yaml_nodes'):,} values "
                              "(YAML aliases repeat what they name); TRIAGE_MAX_YAML_NODES raises the limit"))
    if len(path) > pos.depth:
        line, col = _mark(node)
        raise _TooBig(Problem(fname, line, col, f"nested deeper than {pos.depth} levels; "
                              "TRIAGE_MAX_YAML_DEPTH raises the limit"))
    pos.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                line, col = _mark(knode)
                problems.append(Problem(fname, line, col, "a key must be a plain value"))
                continue
            key = _scalar(knode, problems, fname, loader)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                line, col = _mark(knode)
                problems.append(Problem(fname, line, col, f"a key must be text or a number, not {key!r}"))
                continue
            if knode.tag == "tag:yaml.org,2002:merge":
                line, col = _mark(knode)
                problems.append(Problem(fname, line, col, "merge keys (<<) are not supported"))
                continue
            if key in out:
                line, col = _mark(knode)
                problems.append(Problem(fname, line, col, f"duplicate key {key!r}"))
                continue
            pos.keys[path + (key,)] = _mark(knode)
            out[key] = _build(vnode, path + (key,), pos, problems, fname, loader)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(v, path + (i,), pos, problems, fname, loader) for i, v in enumerate(node.value)]
    return _scalar(node, problems, fname, loader)


def _scalar(node: yaml.Node, problems: list, fname: str, loader: Any) -> Any:
    """One scalar as a value, or None with its problem noted: a date that is
    no date (``2026-02-30``), ``!!int abc``, a 5,000-digit integer, a number
    a NUL character.  (Numbers out of range are the schema's to refuse.)"""
    try:
        value = loader.construct_object(node)
    except (ValueError, TypeError, OverflowError, yaml.YAMLError) as e:
        line, col = _mark(node)
        what = str(e).splitlines()[0].split(";")[0] if str(e) else type(e).__name__
        problems.append(Problem(fname, line, col, f"{_short(node.value)} is not a valid {_tag(node)}: {what}"))
        return None
    if isinstance(value, str) and "\x00" in value:
        line, col = _mark(node)
        problems.append(Problem(fname, line, col, "a NUL character is not allowed"))
    elif isinstance(value, str) and len(value) > limits.get("rule_text"):
        line, col = _mark(node)
        problems.append(Problem(fname, line, col, f"a text of {len(value):,} characters; at most "
                                f"{limits.get('rule_text'):,} (TRIAGE_MAX_RULE_TEXT raises the limit)"))
    return value


def _tag(node: yaml.Node) -> str:
    return node.tag.rsplit(":", 1)[-1] if node.tag else "value"


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:39] + "…")


def parse_yaml(text: str, fname: str) -> tuple[Any, _Positions, list[Problem]]:
    """Parse one YAML document into plain data plus the position of everything."""
    problems: list[Problem] = []
    pos = _Positions()
    loader = YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, pos, [Problem(fname, 1, 1, "the file is empty")]
        data = _build(node, (), pos, problems, fname, loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(x for x in (e.context, e.problem) if x)
        plain = hint(text, line, what)
        return None, pos, [Problem(fname, line, col, f"YAML syntax: {what}" + (f"; {plain}" if plain else ""))]
    except yaml.YAMLError as e:
        return None, pos, [Problem(fname, 1, 1, f"YAML syntax: {e}")]
    except _TooBig as e:
        return None, pos, [e.problem]
    finally:
        loader.dispose()
    return data, pos, problems
