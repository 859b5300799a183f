"""The rule-file language, as strict pydantic models (unknown keys refused).

A rule file holds at most one investigation with its hypotheses, recipes,
rules, manual evidence and bisects; shared files may hold only signatures and
extractors.  ``loader.py`` maps every validation error back to ``path:line:col``.
"""

import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from triage.numbers import out_of_range

ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"

Verdict = Literal["rules_out", "confirms", "supports", "inconclusive"]
# What a run did: passed, failed (its own verdict), timeout (hung or ran out of
# time), oom (killed for memory), crashed, cancelled, infra (runner lost, setup
# failed).  Only passed and the outcomes an investigation declares its failure
# (`failure:`, default [failed]) are results; the others are "no result".
OUTCOMES = ("passed", "failed", "timeout", "oom", "crashed", "cancelled", "infra")
# Older knowledge bases, import files and rule files say `error` for `infra`.
ALIASES = {"error": "infra"}
# Every word accepted where a status is given (read as :func:`outcome` says).
STATUSES = OUTCOMES + tuple(ALIASES)
# The outcomes that are no result unless an investigation declares them its failure.
INVALID_STATUSES = ("timeout", "oom", "crashed", "cancelled", "infra", "error")
DEFAULT_FAILURE = ("failed",)


def outcome(word: str) -> str:
    """The outcome a status word names (`error` is read as `infra`)."""
    return ALIASES.get(word, word)


def _statuses(v: Any) -> Any:
    for s in [v] if isinstance(v, str) else (v or []):
        if s not in STATUSES:
            raise ValueError(f"unknown status {s!r}; expected one of {', '.join(OUTCOMES)}")
    return v

# `then:` accepts the status words as well as the verdict words.
THEN_ALIASES = {
    "ruled_out": "rules_out",
    "rules_out": "rules_out",
    "confirmed": "confirms",
    "confirms": "confirms",
    "supports": "supports",
    "supported": "supports",
    "inconclusive": "inconclusive",
}


def verdict_word(value: str, message: str) -> str:
    """The evidence verdict a `then:`/`verdict:` word names (status words accepted)."""
    if value not in THEN_ALIASES:
        raise ValueError(message)
    return THEN_ALIASES[value]


#: The largest PR number, sample count or run count a file may give (the
#: knowledge base stores them as 32-bit integers on PostgreSQL).
MAX_INT = 2**31 - 1


class Strict(BaseModel):
    # NaN and infinities are refused everywhere: `gate: .nan` would silently
    # change every verdict.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, allow_inf_nan=False,
                              defer_build=True)

    @field_validator("*", mode="after")
    @classmethod
    def _numbers_in_range(cls, v: Any) -> Any:
        """Every number of a rule file lies in triage's range (triage.numbers):
        a gate or a reference at 1.7e308 would overflow every statistic."""
        _check_range(v)
        return v


def _check_range(v: Any) -> None:
    if isinstance(v, (list, tuple)):
        for x in v:
            _check_range(x)
    elif isinstance(v, dict):
        for x in v.values():
            _check_range(x)
    else:
        problem = out_of_range(v)
        if problem:
            raise ValueError(f"{v!r} is {problem}")


Scalar = Union[str, int, float, bool]
Bound = Union[float, str]  # a number, "gate", or a reference name


class AtLeastSubjects(Strict):
    """At least N subjects must hold (and it is false once fewer than N can)."""

    at_least: int = Field(ge=1, le=MAX_INT)


# How per-subject values combine: every subject, any subject, or at least N of them.
Combine = Union[Literal["all", "any"], AtLeastSubjects]


class Selector(Strict):
    """Which runs a comparison looks at."""

    config: Optional[Union[str, list[str]]] = None
    run: Optional[Union[str, list[str]]] = None
    provenance: Optional[dict[str, Union[Scalar, list[Scalar]]]] = None

    @field_validator("run", mode="before")
    @classmethod
    def _run_str(cls, v: Any) -> Any:
        if isinstance(v, int):
            return str(v)
        if isinstance(v, list):
            return [str(x) if isinstance(x, int) else x for x in v]
        return v


class Condition(Selector):
    """A test over runs; every key present must hold (`all`/`any`/`not` nest).

    Selector keys (`config`, `run`, `provenance`, `status`) choose the runs;
    without them a condition looks at the runs its context gives (a recipe's
    runs, a bisect point's runs).  Comparisons are noise-aware.
    """

    status: Optional[Union[str, list[str]]] = None
    metric: Optional[str] = None
    at_least: Optional[Bound] = None
    below: Optional[Bound] = None
    between: Optional[tuple[Bound, Bound]] = None
    same_as: Optional[Union[str, Selector]] = None
    differs_from: Optional[Union[str, Selector]] = None
    recovers: Optional[bool] = None
    # Direction-aware, noise-aware: better or worse for the metric's direction.
    passes: Optional[Bound] = None
    fails: Optional[Bound] = None
    better_than: Optional[Union[str, Selector]] = None
    worse_than: Optional[Union[str, Selector]] = None
    no_worse_than: Optional[Union[str, Selector]] = None
    margin: Optional[Union[str, float]] = None  # the difference that matters: 5 or "2%"
    min_runs: Optional[int] = Field(default=None, ge=1, le=MAX_INT)
    # Counting: the selected valid runs (`count`), or their distinct values of a
    # provenance key (`distinct` with `at_least`).
    count: Optional[int] = Field(default=None, ge=1, le=MAX_INT)
    distinct: Optional[str] = None
    # Over a bisect's state (evaluated after the bisects).
    bisect: Optional[str] = None
    first_bad: Optional[str] = None
    last_good: Optional[str] = None
    done: Optional[bool] = None
    all: Optional[list["Condition"]] = None
    any: Optional[list["Condition"]] = None
    not_: Optional["Condition"] = Field(default=None, alias="not")
    # With an investigation's `subject:`, how this condition's per-subject values combine
    # (default: the investigation's `combine`); only on the outermost condition.
    subjects: Optional[Combine] = None

    @field_validator("status")
    @classmethod
    def _status(cls, v: Any) -> Any:
        return _statuses(v)

    @field_validator("margin")
    @classmethod
    def _margin(cls, v: Any) -> Any:
        return _amount(v, "margin")

    @model_validator(mode="after")
    def _not_empty(self) -> "Condition":
        if not self.model_fields_set:
            raise ValueError("empty condition: give a selector, a comparison, or all/any/not")
        n = self.at_least
        if self.distinct is not None and not (isinstance(n, (int, float)) and float(n).is_integer() and n >= 1):
            raise ValueError("distinct needs at_least: N, a whole number of distinct values")
        on_bisect = [k for k in ("first_bad", "last_good", "done") if getattr(self, k) is not None]
        if self.bisect is None and on_bisect:
            raise ValueError(f"{on_bisect[0]} needs bisect: ID")
        if self.bisect is not None and len(on_bisect) != 1:
            raise ValueError("bisect: ID needs exactly one of first_bad, last_good or done")
        return self

    def comparisons(self) -> list[str]:
        return [
            k
            for k in ("at_least", "below", "between", "same_as", "differs_from", "recovers", "passes", "fails",
                      "better_than", "worse_than", "no_worse_than")
            if getattr(self, k) is not None and not (k == "at_least" and self.distinct is not None)
        ]

    def parts(self) -> list["Condition"]:
        """The conditions nested one level down: ``all``'s, ``any``'s, then ``not``'s."""
        return [*(self.all or []), *(self.any or []), *([self.not_] if self.not_ is not None else [])]

    def bisects(self) -> set[str]:
        """The bisects this condition reads, nested conditions included."""
        out = {self.bisect} if self.bisect else set()
        for sub in self.parts():
            out |= sub.bisects()
        return out


PredictionWord = Literal["recovers", "same_as_bad", "unchanged"]


class PredictionSpec(Strict):
    """A prediction with its weight: `confirms: true` when, were the hypothesis
    false, the recipe's result would have come out otherwise."""

    when: Union[PredictionWord, Condition]
    confirms: Optional[bool] = None


Prediction = Union[PredictionWord, PredictionSpec, Condition]


class Reference(Strict):
    """A named reference: a config's valid runs (pooled; bisect points left out unless `where`
    names the bisect's axis), its newest valid run, one run, or a number."""

    config: Optional[str] = None
    run: Optional[str] = None
    value: Optional[float] = None
    n: Optional[int] = Field(default=None, ge=1, le=MAX_INT)
    note: Optional[str] = None
    where: dict[str, Union[Scalar, list[Scalar]]] = {}  # only the config's runs with this provenance
    newest: bool = False  # only the config's newest valid run (by time, then recording order)

    @field_validator("run", mode="before")
    @classmethod
    def _run_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @model_validator(mode="after")
    def _one_source(self) -> "Reference":
        given = [k for k in ("config", "run", "value") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a reference needs exactly one of config, run or value")
        if self.n is not None and self.value is None:
            raise ValueError("n goes with value (a run's n comes from the run)")
        if (self.where or self.newest) and self.config is None:
            raise ValueError("where and newest go with config (they choose among its runs)")
        return self


class DispatchSpec(Strict):
    """How to start a recipe or bisect point through GitHub's workflow_dispatch:
    the workflow file, the ref, and the inputs (``{ids}``, ``{point}`` and each
    axis key are filled in as in ``run:``)."""

    workflow: str = Field(min_length=1)
    ref: str = Field(min_length=1)
    inputs: dict[str, Scalar] = {}


class AutopilotSpec(Strict):
    """``triage autopilot`` may start the top suggestion itself, within this budget."""

    max_runs: int = Field(ge=1)
    max_cost: Optional[float] = Field(default=None, gt=0)


def _login(v: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}", v):
        raise ValueError(f"{v!r} is not a GitHub login (letters, digits and hyphens, at most 39)")
    return v


class CommandsSpec(Strict):
    """Who gives ``/triage`` comment commands besides those with write access: ``allow`` act too, ``deny`` never."""

    allow: list[Annotated[str, AfterValidator(_login)]] = []
    deny: list[Annotated[str, AfterValidator(_login)]] = []


class MatchSpec(Strict):
    """Which workflow runs feed the investigation (``triage serve``): globs, or lists of them."""

    workflow: Union[str, list[str], None] = None  # only runs of these workflows (by name)
    event: Union[str, list[str], None] = None  # only runs triggered so (schedule, push, ...)
    branch: Union[str, list[str], None] = None  # runs on these branches count without the PR
    config_from: Optional[str] = None  # a regex: the config is its first group in the job name

    @field_validator("config_from")
    @classmethod
    def _regex(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"config_from is not a regular expression ({e})") from None
        return v


def _amount(v: Any, what: str) -> Any:
    """Check a number or a percentage (a tolerance, a margin, a noise)."""
    if v is None:
        return v
    from triage.rules.decisions.stats import Tolerance

    try:
        Tolerance.parse(v)
    except ValueError as e:
        raise ValueError(str(e).replace("tolerance", what)) from None
    return v


class MetricSpec(Strict):
    """Per-metric settings: which way is better, its known noise, its size, its scale."""

    direction: Optional[Literal["higher", "lower"]] = None  # default: the investigation's
    noise: Optional[Union[str, float]] = None  # run-to-run SD of one run: 3.1 or "0.8%"
    n_max: Optional[int] = Field(default=None, ge=1)  # the benchmark's size (GSM8K: 1319)
    scale: Optional[float] = Field(default=None, gt=0)  # a proportion's full scale: 1 or 100

    @field_validator("noise")
    @classmethod
    def _noise(cls, v: Any) -> Any:
        return _amount(v, "noise")


class SubjectSpec(Strict):
    """One subject's own settings (a model, a benchmark, a test): each unset one is the investigation's."""

    gate: Optional[float] = None
    references: dict[str, Reference] = {}
    metrics: dict[str, MetricSpec] = {}

    @field_validator("references")
    @classmethod
    def _ref_names(cls, v: dict) -> dict:
        return _reference_names(v)


def _reference_names(v: dict) -> dict:
    for name in v:
        if not re.fullmatch(ID_RE, name):
            raise ValueError(f"bad reference name {name!r}")
        if name == "gate":
            raise ValueError("'gate' is reserved for the investigation's gate")
    return v


class InvestigationSpec(Strict):
    id: str = Field(pattern=ID_RE)
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    pr: int = Field(ge=1, le=MAX_INT)
    title: str
    metric: str
    direction: Literal["higher", "lower"] = "higher"
    gate: Optional[float] = None
    tolerance: Optional[Union[str, float]] = None
    confidence: float = Field(default=0.95, gt=0.5, le=0.999999)  # six digits at most: z stays computable
    references: dict[str, Reference] = {}
    metrics: dict[str, MetricSpec] = {}
    base: Optional[str] = None
    config_prefix: Optional[str] = None
    summary: Optional[str] = None
    links: dict[str, str] = {}
    # Provenance keys that always differ between a recipe's run and its base
    # run without changing what is measured (a branch name, a runner id):
    # never reported as confounds.
    ignore_provenance: list[str] = []
    autopilot: Optional[AutopilotSpec] = None
    match: Optional[MatchSpec] = None  # the workflow runs that feed it, for `triage serve`
    commands: Optional[CommandsSpec] = None  # who may give /triage commands, for `triage serve`
    # The outcomes that are the failure under study (bad results); other non-passing ones are no result.
    failure: list[str] = Field(default=list(DEFAULT_FAILURE), min_length=1)
    # Several subjects in one investigation: the provenance key that names a run's subject
    # (a model, a benchmark, a test), each subject's own settings, and how their values combine.
    subject: Optional[str] = Field(default=None, min_length=1)
    subjects: dict[str, SubjectSpec] = {}
    combine: Combine = "all"

    @field_validator("failure")
    @classmethod
    def _failure(cls, v: list[str]) -> list[str]:
        _statuses(v)
        if "passed" in v:
            raise ValueError("failure lists the outcomes that are the failure under study: passed is not one")
        return v

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, v: Any) -> Any:
        return _amount(v, "tolerance")

    @field_validator("references")
    @classmethod
    def _ref_names(cls, v: dict) -> dict:
        return _reference_names(v)

    @model_validator(mode="after")
    def _subjects(self) -> "InvestigationSpec":
        if self.subject is None and (self.subjects or self.combine != "all"):
            raise ValueError("subjects and combine need subject: KEY (the provenance key that names a subject)")
        return self


class Override(Strict):
    """A status set by hand, with the reason: shown as such, never hidden."""

    status: Literal["open", "ruled_out", "confirmed", "inconclusive"]
    because: str = Field(min_length=1)
    author: Optional[str] = None


class HypothesisSpec(Strict):
    id: str = Field(pattern=ID_RE)
    title: str
    text: str = ""
    parent: Optional[str] = None
    override: Optional[Override] = None
    exclusive: bool = False  # at most one of its children may be confirmed
    vary: list[str] = []  # the variables it says matter, to tell it from its rivals
    prior: Optional[float] = Field(default=None, gt=0)  # weight in the ranking of suggestions (default 1)


class RecipeSpec(Strict):
    id: str = Field(pattern=ID_RE)
    base: Optional[str] = None
    # The run a recipe's runs are compared with for confounds: ID or ID/config.
    # Default: the newest valid run of the base config.
    base_run: Optional[str] = None
    change: str = ""
    vary: dict[str, Scalar] = {}
    tests: list[str] = []
    predicts: dict[str, Prediction] = {}
    run: Optional[str] = None
    dispatch: Optional[DispatchSpec] = None
    cost: Optional[float] = Field(default=None, gt=0)
    note: Optional[str] = None

    @field_validator("base_run", mode="before")
    @classmethod
    def _run_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v


class RuleSpec(Strict):
    id: str = Field(pattern=ID_RE)
    hypothesis: str
    when: Condition
    then: str
    because: Optional[str] = None
    supersedes: list[str] = []

    @field_validator("because")
    @classmethod
    def _because(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and ("{{" in v or "{%" in v):
            from triage.sandbox import check_template

            check_template(v)  # within the output and time limits
        return v

    @field_validator("then")
    @classmethod
    def _then(cls, v: str) -> str:
        return verdict_word(v, "then must be one of ruled_out, confirmed, supports, inconclusive")


class ManualEvidenceSpec(Strict):
    hypothesis: str
    verdict: str
    because: str
    author: Optional[str] = None
    runs: list[str] = []

    @field_validator("verdict")
    @classmethod
    def _verdict(cls, v: str) -> str:
        return verdict_word(v, "verdict must be one of rules_out, confirms, supports, inconclusive")

    @field_validator("runs", mode="before")
    @classmethod
    def _runs(cls, v: Any) -> Any:
        return [str(x) for x in v] if isinstance(v, list) else v


class BisectMark(Strict):
    """A point judged by hand, as ``git bisect good|bad`` does."""

    point: str
    verdict: Literal["good", "bad"]
    because: str = Field(min_length=1)
    author: Optional[str] = None


class BisectSpec(Strict):
    id: str = Field(pattern=ID_RE)
    title: Optional[str] = None
    axis: Union[str, list[str]]
    points: list[Union[str, list[str]]] = Field(min_length=2)
    good_when: Condition
    where: dict[str, Scalar] = {}
    config: Optional[Union[str, list[str]]] = None  # only runs of these configs count
    run: Optional[str] = None  # command template: {point}, {axis} and each axis key filled in
    marks: list[BisectMark] = []
    dispatch: Optional[DispatchSpec] = None
    # what the bisect's answer decides: {first_bad_found: {hypothesis: verdict}}
    decides: dict[Literal["first_bad_found"], dict[str, str]] = {}

    @field_validator("decides")
    @classmethod
    def _decides(cls, v: dict) -> dict:
        return {k: {h: verdict_word(w, "decides: a verdict must be one of ruled_out, confirmed, supports, "
                                      "inconclusive") for h, w in hs.items()} for k, hs in v.items()}

    @model_validator(mode="after")
    def _shape(self) -> "BisectSpec":
        width = 1 if isinstance(self.axis, str) else len(self.axis)
        for p in self.points:
            if (1 if isinstance(p, str) else len(p)) != width:
                raise ValueError(f"every point needs {width} value(s), one per axis key")
        return self

    def point_labels(self) -> list[str]:
        return [p if isinstance(p, str) else " + ".join(p) for p in self.points]


class SignatureSpecModel(Strict):
    id: str = Field(pattern=ID_RE)
    text: str = Field(min_length=3)
    cls: str = Field(alias="class")
    meaning: str = ""
    remedy: str = ""
    regex: bool = False
    # What a matched run did (timeout, oom, infra, ...): its status, and a result when the
    # investigation declares that outcome its failure (else a known failure is no result).
    outcome: Optional[str] = None

    @field_validator("outcome")
    @classmethod
    def _outcome(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (_statuses(v) == "passed"):
            raise ValueError("a signature's outcome is what a failing run did: passed is not one")
        return v

    @model_validator(mode="after")
    def _regex(self) -> "SignatureSpecModel":
        from triage.rules.language.extractorcheck import check_signature

        check_signature(self)  # its ValueError says what is wrong
        return self


class ExtractorSpec(Strict):
    id: str = Field(pattern=ID_RE)
    pattern: Optional[str] = None  # a regular expression over a log's lines
    json_: Optional[str] = Field(default=None, alias="json")  # or a JMESPath expression over a JSON results file
    metric: Optional[str] = None
    provenance: Optional[str] = None
    status: Optional[Union[str, dict[str, str]]] = None
    pick: Literal["first", "last"] = "last"
    n: Optional[int] = Field(default=None, ge=1, le=MAX_INT)  # sample count for a metric, when the log does not say
    n_json: Optional[str] = None  # or a JMESPath expression for it in the same results file (json: metrics)

    @model_validator(mode="after")
    def _kind(self) -> "ExtractorSpec":
        from triage.rules.language.extractorcheck import check_extractor

        check_extractor(self)  # its ValueError says what is wrong
        return self


class RuleFile(Strict):
    schema_version: Literal[1]
    investigation: Optional[InvestigationSpec] = None
    hypotheses: list[HypothesisSpec] = []
    recipes: list[RecipeSpec] = []
    rules: list[RuleSpec] = []
    evidence: list[ManualEvidenceSpec] = []
    bisects: list[BisectSpec] = []
    signatures: list[SignatureSpecModel] = []
    extractors: list[ExtractorSpec] = []
    # Groups of hypotheses that exclude each other: at most one may be confirmed.
    exclusive: list[list[str]] = []

    @model_validator(mode="after")
    def _needs_investigation(self) -> "RuleFile":
        if self.investigation is None:
            for key in ("hypotheses", "recipes", "rules", "evidence", "bisects", "exclusive"):
                if getattr(self, key):
                    raise ValueError(f"{key} need an investigation in the same file")
        elif self.investigation.subject is None:
            conds = [r.when for r in self.rules] + [b.good_when for b in self.bisects] + [
                p.when if isinstance(p, PredictionSpec) else p for r in self.recipes for p in r.predicts.values()]
            if any(isinstance(c, Condition) and c.subjects is not None for c in conds):
                raise ValueError("a condition's subjects: needs the investigation's subject: KEY")
        return self
