"""`triage init`: a new investigation's rule file and its test file, ready to edit.

The live parts (the investigation, one hypothesis, one recipe with a
prediction) are valid as written, so `triage check` and `triage test` pass on
the scaffold; everything else is a commented example to uncomment and adapt.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from triage.errors import InputError
from triage.rules.language.schema import ID_RE

REPO_RE = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"


@dataclass(frozen=True)
class Scaffold:
    id: str
    repo: str
    pr: int
    metric: str
    direction: str
    gate: float | None = None  # many investigations have none: a revert is then compared with the bad runs
    tolerance: str | None = None
    title: str | None = None


def _q(text: str) -> str:
    """A YAML scalar that survives any text (a JSON string is valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def validate(s: Scaffold) -> None:
    if not re.fullmatch(ID_RE, s.id):
        raise InputError(f"--id {s.id!r}: letters, digits and . _ + - only, starting with a letter or digit")
    if not re.fullmatch(REPO_RE, s.repo):
        raise InputError(f"--repo {s.repo!r}: expected OWNER/NAME")
    if not re.fullmatch(ID_RE, s.metric):
        raise InputError(f"--metric {s.metric!r}: letters, digits and . _ + - only")
    if s.direction not in ("higher", "lower"):
        raise InputError(f"--direction {s.direction!r}: expected higher or lower (which way is better)")
    if s.gate is not None and not math.isfinite(s.gate):
        raise InputError(f"--gate {s.gate!r}: expected a finite number")
    if s.tolerance is not None:
        from triage.rules.decisions.stats import Tolerance

        try:
            Tolerance.parse(s.tolerance)
        except ValueError as e:
            raise InputError(f"--tolerance: {e}") from None


def _values(s: Scaffold) -> tuple[float, float]:
    """(a failing value, a passing value) for the test skeleton: on the right sides of
    the gate, or without one, the bad value and one 10% better."""
    centre = s.gate if s.gate is not None else 100.0
    step = abs(centre) * 0.1 or 1.0
    if s.gate is None:
        return centre, round(centre + step if s.direction == "higher" else centre - step, 6)
    bad, good = (centre - step, centre + step) if s.direction == "higher" else (centre + step, centre - step)
    return round(bad, 6), round(good, 6)


def rule_file(s: Scaffold) -> str:
    base = f"{s.id}-nightly"
    passes = "{passes: gate}" if s.gate is not None else "{better_than: bad}"
    gate = (f"gate: {_num(s.gate)}                # the value {s.metric} must pass" if s.gate is not None else
            f"# gate: 150                   # optional: the value {s.metric} must pass, when there is one")
    tolerance = f"\n  tolerance: {_q(s.tolerance)}          # the difference that is noise" if s.tolerance else (
        "\n  # tolerance: 1%                # the difference that is noise, when runs carry no n and no repeats")
    title = s.title or f"{s.metric} regression on {s.repo}#{s.pr}"
    return f"""\
# {title}
# Written by `triage init`. Validate with `triage check`, test with `triage test`.
# Each commented block is an example: uncomment it and make it yours.
schema_version: 1

investigation:
  id: {s.id}
  repo: {s.repo}
  pr: {s.pr}
  title: {_q(title)}
  metric: {s.metric}
  direction: {s.direction}                # which way is better for {s.metric}
  {gate}{tolerance}
  base: {base}                 # the failing config (the nightly leg)
  references:
    bad: {{config: {base}}}    # the failing config's valid runs, pooled (its bisect points left out); newest: true for the newest
    # good: {{value: 0.944, n: 1319, note: the last good nightly}}

hypotheses:
  - id: suspect-change
    title: The suspected change (one variable; write what you would revert)
  # - id: suspect-part
  #   parent: suspect-change         # decided once its parent is confirmed
  #   title: One part of the suspected change

recipes:
  # A recipe changes one variable of its base config and says what each
  # hypothesis predicts for its runs: a prediction that fails rules it out.
  - id: {base}-revert
    base: {base}
    change: revert the suspected change
    vary: {{suspect: reverted}}           # the one provenance key this recipe changes
    tests: [suspect-change]
    predicts:                          # a revert that recovers confirms the suspect; one that stays bad rules it out
      suspect-change: {{when: {passes}, confirms: true}}
    # run: gh workflow run nightly.yml -f configs={{ids}}
    # cost: 1                          # relative cost, for ranking suggestions

# rules:
#   - id: probe-clean
#     hypothesis: suspect-change
#     when: {{config: {base}-probe, metric: zero_rows, below: 1}}
#     then: ruled_out
#     because: "the probe reads no zero rows (quote text that holds a #123 reference)"

# bisects:
#   - id: image
#     axis: image
#     config: {base}
#     points: [image-2026-06-23, image-2026-06-25, image-2026-06-26]   # good end first, bad end last
#     good_when: {passes}
#     run: gh workflow run nightly.yml -f image={{point}}

# signatures:                          # known failures: a matching run never rules anything out
#   - id: oom-at-start
#     text: "CUDA out of memory"
#     class: infra                     # infra | setup-error | crash | …
#     meaning: the server ran out of memory before serving
#     remedy: lower --mem-fraction-static

# extractors:                          # read metrics from a log with `add-run --log`
#   - id: {s.metric}-line
#     pattern: '^{re.escape(s.metric)}: (?P<value>[0-9.]+)'
#     metric: {s.metric}
"""


def test_file(s: Scaffold) -> str:
    base = f"{s.id}-nightly"
    bad, good = _values(s)
    return f"""\
# Unit tests of ../{s.id}.yaml: runs in, statuses out. Run with: triage test
rule_files: [../{s.id}.yaml]

tests:
  - name: a revert that stays bad rules the suspect out
    runs:
      - {{run_id: "1", config: {base}, status: failed, metrics: {{{s.metric}: {{value: {_num(bad)}}}}}}}
      - {{run_id: "2", config: {base}-revert, status: failed, metrics: {{{s.metric}: {{value: {_num(bad)}}}}}}}
    expect:
      suspect-change: ruled_out

  - name: a revert that recovers confirms the suspect
    runs:
      - {{run_id: "1", config: {base}, status: failed, metrics: {{{s.metric}: {{value: {_num(bad)}}}}}}}
      - {{run_id: "2", config: {base}-revert, status: passed, metrics: {{{s.metric}: {{value: {_num(good)}}}}}}}
    expect:
      suspect-change: confirmed
"""


def write(s: Scaffold, rules_dir: Path, force: bool = False) -> list[Path]:
    """Write ``rules_dir/ID.yaml`` and ``rules_dir/tests/ID.test.yaml``; refuse to overwrite unless ``force``."""
    validate(s)
    targets = [(rules_dir / f"{s.id}.yaml", rule_file(s)), (rules_dir / "tests" / f"{s.id}.test.yaml", test_file(s))]
    if not force:
        existing = [str(p) for p, _ in targets if p.exists()]
        if existing:
            raise InputError(f"{', '.join(existing)} already exist(s): pick another --id, or --force to overwrite")
    for path, text in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return [p for p, _ in targets]
